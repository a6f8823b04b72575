package v1

// Reasons of the addon's conditions and Events. Each is CamelCase and names
// what happened; the message beside it is a sentence for `kubectl describe`.
// Each is declared once, with its kind (Reason): normal (progress,
// a Normal Event), warning (needs a person's attention: something to fix,
// or something the addon did on its own that a person should know about; a
// Warning Event) or stalling (a warning that, on a False condition, holds
// its object until a person acts: fix a Secret, the configuration or the
// spec, pick another plan or metro, power a server on, delete a duplicate
// device; health and maintenance reasons are not among them, they resolve
// on their own or the pool replaces the server).
var (
	// Credentials and the cluster's join information.
	ReasonCredentialsReady   = normal("CredentialsReady")
	ReasonCredentialsMissing = stalling("CredentialsMissing")
	ReasonCredentialsInvalid = stalling("CredentialsInvalid")
	ReasonSecretNotFound     = stalling("SecretNotFound")
	ReasonSecretIncomplete   = stalling("SecretIncomplete")
	ReasonSecretNotLabelled  = stalling("SecretNotLabelled")
	ReasonProjectMismatch    = stalling("ProjectMismatch")
	ReasonProjectChanged     = stalling("ProjectChanged")
	ReasonJoinInfoReady      = normal("JoinInfoReady")
	ReasonJoinInfoMissing    = stalling("JoinInfoMissing")
	ReasonClusterURLMissing  = stalling("ClusterURLMissing")
	ReasonJoinTokenMissing   = stalling("JoinTokenMissing")
	ReasonVersionUnknown     = stalling("VersionUnknown")
	ReasonIPXEURLMissing     = stalling("IPXEURLMissing")
	ReasonReleaseNotFound    = stalling("ReleaseNotFound")
	// ReasonInstallDiskTooSmall and ReasonInstallDiskMissing: the plan's
	// install disk cannot take the Harvester version, or is not on the plan.
	ReasonInstallDiskTooSmall = stalling("InstallDiskTooSmall")
	ReasonInstallDiskMissing  = stalling("InstallDiskMissing")

	// The device.
	ReasonDeviceCreated     = normal("DeviceCreated")
	ReasonDeviceAdopted     = normal("DeviceAdopted")
	ReasonCreateSent        = normal("CreateSent")
	ReasonCreateUnconfirmed = warning("CreateUnconfirmed")
	ReasonDuplicateDevices  = stalling("DuplicateDevices")
	ReasonInvalidRequest    = stalling("InvalidRequest")
	ReasonNoCapacity        = stalling("NoCapacity")
	// ReasonReservationUnavailable: the server's hardware reservation
	// cannot take it (used, another plan or metro, a spare, none left).
	ReasonReservationUnavailable = warning("ReservationUnavailable")
	ReasonThrottled              = normal("Throttled")
	ReasonProvisioning           = normal("Provisioning")
	ReasonDeviceActive           = normal("DeviceActive")
	ReasonProvisionFailed        = stalling("ProvisionFailed")
	ReasonDeviceGone             = stalling("DeviceGone")
	// Servers people own: the claim of an Inventory, its one-time network
	// boot and power through the BMC, and its release.
	ReasonServerClaimed = normal("ServerClaimed")
	ReasonNoFreeServer  = warning("NoFreeServer")
	ReasonServerGone    = warning("ServerGone")
	ReasonServersFree   = normal("ServersFree")
	ReasonNetworkBoot   = normal("NetworkBoot")
	// A server's static management address from the AddressPool its pool
	// names (spec.servers.addressPool): taken, given back, or none to be
	// had (the pool missing, its spec unusable, every address held).
	ReasonAddressAllocated     = normal("AddressAllocated")
	ReasonAddressReleased      = normal("AddressReleased")
	ReasonAddressPoolNotFound  = warning("AddressPoolNotFound")
	ReasonAddressPoolInvalid   = warning("AddressPoolInvalid")
	ReasonAddressPoolExhausted = warning("AddressPoolExhausted")
	// ReasonBootScriptServed: the server's firmware booted from the
	// network and the boot endpoint served it the installer script.
	ReasonBootScriptServed = normal("BootScriptServed")
	// ReasonInstallerRunning: the boot endpoint served the install
	// configuration, which only the running installer asks for.
	ReasonInstallerRunning = normal("InstallerRunning")
	ReasonBMCFailed        = warning("BMCFailed")
	// ReasonServerQuarantined: a server failed to install or join
	// remediation.quarantineAfter times in a row and is set aside (label
	// equinix.harvesterhci.io/quarantined on its Inventory).
	ReasonServerQuarantined = warning("ServerQuarantined")
	// ReasonServersQuarantined: no free server, and some that would be
	// are quarantined; the pool is short until a person clears them.
	ReasonServersQuarantined = warning("ServersQuarantined")
	// ReasonBootFirmwareInvalid: the Inventory's boot-firmware annotation
	// is neither UEFI nor Legacy, or Legacy for an arm64 server; nothing
	// is asked of its BMC until it is fixed.
	ReasonBootFirmwareInvalid = warning("BootFirmwareInvalid")
	// ReasonBootPathChosen: how the server is booted into the installer
	// (virtual media, UEFI HTTP or PXE) and why, from what its BMC offers.
	ReasonBootPathChosen = normal("BootPathChosen")
	// ReasonBootPathUnavailable: the pool's spec.servers.bootPath names a
	// boot path the server's BMC (or the boot endpoint) cannot give;
	// nothing is asked of the BMC until the pin or the BMC changes.
	ReasonBootPathUnavailable = warning("BootPathUnavailable")
	// ReasonBootImagesBusy: as many servers as the boot endpoint serves
	// boot images to at once are booting from theirs; this one waits for
	// one of them to fetch its installer script.
	ReasonBootImagesBusy = normal("BootImagesBusy")
	// ReasonBootMedia: the claim's boot image was inserted in the BMC's
	// virtual CD, and the server booted from it once.
	ReasonBootMedia = normal("BootMedia")
	// ReasonHTTPBoot: the BMC was told to boot the server once from
	// the claim's image URL with its UEFI HTTP boot client.
	ReasonHTTPBoot = normal("HTTPBoot")
	// ReasonBootMediaEjected: the image the addon inserted left the
	// virtual CD (at the join, or the release).
	ReasonBootMediaEjected = normal("BootMediaEjected")
	// ReasonBootMediaEjectFailed: the BMC refused to eject the image the
	// addon inserted; asked again with backoff, and a release waits.
	ReasonBootMediaEjectFailed = warning("BootMediaEjectFailed")
	ReasonServerReleased       = normal("ServerReleased")
	ReasonPoweringOff          = normal("PoweringOff")
	ReasonPowerCycled          = normal("PowerCycled")
	// ReasonServerInPool: a power request on the Inventory of a server a
	// pool claimed is refused; the pool switches its power.
	ReasonServerInPool = warning("ServerInPool")
	ReasonPoweredOff   = stalling("PoweredOff")
	ReasonReinstalling = normal("Reinstalling")

	// The networking chain.
	ReasonConverged   = normal("Converged")
	ReasonConverging  = normal("Converging")
	ReasonRetrying    = normal("Retrying")
	ReasonStepFailed  = stalling("StepFailed")
	ReasonPortMissing = stalling("PortMissing")
	ReasonVLANCreated = normal("VLANCreated")
	ReasonVLANDeleted = normal("VLANDeleted")

	// The install and the node.
	ReasonInstallConfigured      = normal("InstallConfigured")
	ReasonInvalidConfiguration   = stalling("InvalidConfiguration")
	ReasonPasswordSecretTaken    = stalling("PasswordSecretTaken")
	ReasonInstallStarted         = normal("InstallStarted")
	ReasonInstalled              = normal("Installed")
	ReasonWaiting                = normal("Waiting")
	ReasonNodeJoined             = normal("NodeJoined")
	ReasonNodeNameTaken          = stalling("NodeNameTaken")
	ReasonNodeReady              = normal("NodeReady")
	ReasonNodeNotReadyYet        = normal("NodeNotReadyYet")
	ReasonNodeNotReady           = warning("NodeNotReady")
	ReasonNodeGone               = warning("NodeGone")
	ReasonUserdataNotCleared     = warning("UserdataNotCleared")
	ReasonDeleting               = normal("Deleting")
	ReasonMaintenance            = normal("Maintenance")
	ReasonMaintenanceRefused     = warning("MaintenanceRefused")
	ReasonMaintenanceTimeout     = warning("MaintenanceTimeout")
	ReasonWaitingForProvisioning = normal("WaitingForProvisioning")
	ReasonDeviceDeleted          = normal("DeviceDeleted")
	ReasonNodeDeleted            = normal("NodeDeleted")

	// The pool.
	ReasonAllReady           = normal("AllReady")
	ReasonNotAllReady        = normal("NotAllReady")
	ReasonIdle               = normal("Idle")
	ReasonScalingUp          = normal("ScalingUp")
	ReasonScalingDown        = normal("ScalingDown")
	ReasonBackingOff         = normal("BackingOff")
	ReasonPoolDeleted        = normal("PoolDeleted")
	ReasonUpToDate           = normal("UpToDate")
	ReasonReplacingOutdated  = normal("ReplacingOutdated")
	ReasonRollingOut         = normal("RollingOut")
	ReasonReplacing          = normal("Replacing")
	ReasonRemediating        = normal("Remediating")
	ReasonNotBlocked         = normal("NotBlocked")
	ReasonTooManyFailures    = warning("TooManyFailures")
	ReasonProvisioningFailed = normal("ProvisioningFailed")
	ReasonVLANsChanged       = normal("VLANsChanged")
	ReasonTemplateChanged    = normal("TemplateChanged")
	// Guards that hold a due replacement back (RemediationBlocked).
	ReasonTooManyUnhealthy    = warning("TooManyUnhealthy")
	ReasonReplacementInFlight = warning("ReplacementInFlight")
	ReasonQuorumGuard         = warning("QuorumGuard")
	ReasonSkipAnnotation      = warning("SkipAnnotation")

	// The hardware chain: power requests, forwarded machine events, facts
	// and the provider taking a server back.
	ReasonMaintenanceRequired    = warning("MaintenanceRequired")
	ReasonPowerActionSent        = normal("PowerActionSent")
	ReasonPowerActionUnconfirmed = warning("PowerActionUnconfirmed")
	ReasonPowerActionRetrying    = warning("PowerActionRetrying")
	ReasonPowerActionSucceeded   = normal("PowerActionSucceeded")
	ReasonPowerActionFailed      = warning("PowerActionFailed")
	ReasonPowerActionCancelled   = normal("PowerActionCancelled")
	ReasonPoweredOffOnRequest    = normal("PoweredOffOnRequest")
	ReasonRestartingOnRequest    = normal("RestartingOnRequest")
	// ReasonNodeInMaintenance: the node of a server people own is not
	// Ready while in Harvester maintenance mode, where its power is a
	// person's (Harvester's power actions, through its Inventory): the pool
	// neither power-cycles nor replaces it.
	ReasonNodeInMaintenance   = normal("NodeInMaintenance")
	ReasonHardwareEvent       = normal("HardwareEvent")
	ReasonHardwareWarning     = warning("HardwareWarning")
	ReasonHardwareFactsFailed = warning("HardwareFactsFailed")
	ReasonReclaimScheduled    = warning("ReclaimScheduled")
	// The Node condition HardwareHealthy (False: the worst first; Unknown:
	// HardwareNotReported, or the BMC's reasons below).
	ReasonHardwareOK          = normal("HardwareOK")
	ReasonHardwareCritical    = normal("HardwareCritical")
	ReasonFailurePredicted    = normal("FailurePredicted")
	ReasonHardwareDegraded    = normal("HardwareDegraded")
	ReasonHardwareNotReported = normal("HardwareNotReported")

	// BMC inventories: the node, the BMC's answers and its health.
	ReasonNodeFound             = normal("NodeFound")
	ReasonNodeNotFound          = warning("NodeNotFound")
	ReasonNodeProvisioned       = stalling("NodeProvisioned")
	ReasonDuplicateInventory    = warning("DuplicateInventory")
	ReasonBMCReachable          = normal("BMCReachable")
	ReasonBMCUnreachable        = stalling("BMCUnreachable")
	ReasonBMCProtocolMismatch   = stalling("BMCProtocolMismatch")
	ReasonBMCCertificateInvalid = stalling("BMCCertificateInvalid")
	// ReasonBMCCertificateChanged: a Redfish BMC presented another
	// certificate than the one trusted; ReasonBMCCertificatePinned: the
	// first one seen is trusted from now on; ReasonBMCCertificateAccepted:
	// one a person named is.
	ReasonBMCCertificateChanged  = stalling("BMCCertificateChanged")
	ReasonBMCCertificatePinned   = normal("BMCCertificatePinned")
	ReasonBMCCertificateAccepted = normal("BMCCertificateAccepted")
	// ReasonBMCProtocolFound: what answered at a connection that does not
	// say its protocol (port 623).
	ReasonBMCProtocolFound = normal("BMCProtocolFound")
	// ReasonPollingIntervalClamped: a polling interval outside the bounds
	// is read as the nearest one.
	ReasonPollingIntervalClamped = warning("PollingIntervalClamped")
	ReasonBMCError               = stalling("BMCError")
	ReasonBMCNotContacted        = normal("BMCNotContacted")
	ReasonAuthenticated          = normal("Authenticated")
	ReasonAuthenticationFailed   = stalling("AuthenticationFailed")
	ReasonEventLogRead           = normal("EventLogRead")
	ReasonNoEventLog             = warning("NoEventLog")
	// Seeder's Inventories: where one may be, its node, and the real Seeder.
	ReasonInventoryReady    = normal("InventoryReady")
	ReasonWrongNamespace    = stalling("WrongNamespace")
	ReasonNodeNameMismatch  = stalling("NodeNameMismatch")
	ReasonServerWithoutNode = normal("ServerWithoutNode")
	// ReasonSeederRunning: Harvester's own Seeder runs (it renews its
	// Lease) and serves the Inventories; the addon leaves them alone.
	ReasonSeederRunning = warning("SeederRunning")
	// What Seeder left, taken over once it no longer runs: its admission
	// webhook (removed once nothing serves it), its finalizer on an
	// Inventory, its conditions, a power request it took and never ended.
	ReasonSeederWebhookRemoved   = normal("SeederWebhookRemoved")
	ReasonSeederFinalizerRemoved = normal("SeederFinalizerRemoved")
	ReasonSeederStatusTakenOver  = normal("SeederStatusTakenOver")
	ReasonSeederRequestTakenOver = normal("SeederRequestTakenOver")
	// ReasonPowerRequestLost: a power request the addon took lost its
	// record (a write stripped of status.hardware by a CRD lacking it);
	// it ends failed, nothing sent again.
	ReasonPowerRequestLost = warning("PowerRequestLost")
	// ReasonInventorySchemaTakenOver: the live Inventory CRD lacked the
	// addon's fields (Seeder's schema, or an older release's) and was
	// given the addon's schema. ReasonInventorySchemaOutdated: it lacks
	// them and could not be given it (Seeder runs, or the update failed):
	// the apiserver drops them from every write.
	ReasonInventorySchemaTakenOver = normal("InventorySchemaTakenOver")
	ReasonInventorySchemaOutdated  = warning("InventorySchemaOutdated")
	// ReasonAddonSpecRestored: Harvester's upgrade wrote Seeder's chart
	// version and values into the harvester-seeder Addon pointed at the
	// addon's chart; the addon's own were written back.
	// ReasonAddonSpecOverwritten: the same, with no earlier spec recorded
	// to write back (a person must apply the Addon manifest again).
	ReasonAddonSpecRestored    = warning("AddonSpecRestored")
	ReasonAddonSpecOverwritten = warning("AddonSpecOverwritten")

	// The periodic sweep.
	ReasonOrphanDevice       = warning("OrphanDevice")
	ReasonOrphanDeleted      = warning("OrphanDeleted")
	ReasonOrphanNodeDeleted  = warning("OrphanNodeDeleted")
	ReasonProjectUnreachable = warning("ProjectUnreachable")

	// Reconciling and Stalled, when no other condition lends its reason.
	ReasonInProgress   = normal("InProgress")
	ReasonReconciled   = normal("Reconciled")
	ReasonNotStalled   = normal("NotStalled")
	ReasonServerFailed = normal("ServerFailed")
	// The ElasticIP that follows kube-vip.
	ReasonAssigned          = normal("Assigned")
	ReasonMoving            = normal("Moving")
	ReasonMoved             = normal("Moved")
	ReasonUnassigned        = normal("Unassigned")
	ReasonReserved          = normal("Reserved")
	ReasonNotReserved       = warning("NotReserved")
	ReasonAssignRefused     = warning("AssignRefused")
	ReasonAddressConflict   = warning("AddressConflict")
	ReasonHostMatched       = normal("HostMatched")
	ReasonNoVIPHost         = normal("NoVIPHost")
	ReasonServiceNotFound   = warning("ServiceNotFound")
	ReasonHostNotFound      = warning("HostNotFound")
	ReasonHostUnmatched     = warning("HostUnmatched")
	ReasonHostHealthy       = normal("HostHealthy")
	ReasonHostNotReady      = warning("HostNotReady")
	ReasonHostCordoned      = warning("HostCordoned")
	ReasonHostInMaintenance = warning("HostInMaintenance")
	ReasonElasticIPCreated  = normal("ElasticIPCreated")
	ReasonElasticIPReplaced = normal("ElasticIPReplaced")
	ReasonElasticIPDeleted  = normal("ElasticIPDeleted")
	// The ElasticIPPool and its block.
	ReasonBlockRequested = normal("BlockRequested")
	ReasonBlockPending   = normal("BlockPending")
	ReasonBlockDenied    = warning("BlockDenied")
	ReasonBlockGone      = warning("BlockGone")
	ReasonBlockReleased  = normal("BlockReleased")
	ReasonBlockInUse     = warning("BlockInUse")
	ReasonIPPoolOffered  = normal("IPPoolOffered")
	ReasonIPPoolTaken    = warning("IPPoolTaken")
	ReasonIPPoolMissing  = warning("IPPoolMissing")

	// BGP peering for kube-vip and load balancers, on Nodes.
	ReasonBGPPeersAnnotated = normal("BGPPeersAnnotated")
	ReasonBGPPeersRemoved   = normal("BGPPeersRemoved")
	ReasonBGPFailed         = warning("BGPFailed")

	// Nodes the addon initializes as a cloud provider.
	ReasonNodeInitialized    = normal("NodeInitialized")
	ReasonNodeNotInitialized = warning("NodeNotInitialized")

	// Fencing (--fencing): the Fenced condition of an Inventory, and the
	// Events on its Node.
	ReasonFenceGracePeriod     = normal("FenceGracePeriod")
	ReasonFenceNotNeeded       = normal("FenceNotNeeded")
	ReasonFenceHeldByBound     = warning("FenceHeldByBound")
	ReasonFenceHeldByQuorum    = warning("FenceHeldByQuorum")
	ReasonFenceHeldOwnNode     = warning("FenceHeldOwnNode")
	ReasonFenceHeldMaintenance = warning("FenceHeldMaintenance")
	ReasonFenceHeldBMC         = warning("FenceHeldBMC")
	ReasonFenceHeldPowerAction = warning("FenceHeldPowerAction")
	// ReasonFenceHeldJoining: the node is a pool's server that has not
	// been Ready yet; nothing runs on it, and its pool watches the install.
	ReasonFenceHeldJoining     = normal("FenceHeldJoining")
	ReasonFencePowerOffSending = normal("FencePowerOffSending")
	// ReasonFenceTainting: the server was off already; the taint is
	// being put on (the intent, stored before it).
	ReasonFenceTainting       = normal("FenceTainting")
	ReasonFencePowerOffSent   = normal("FencePowerOffSent")
	ReasonFencePowerOffFailed = warning("FencePowerOffFailed")
	ReasonFenced              = warning("Fenced")
	ReasonFencePowerOnSending = normal("FencePowerOnSending")
	ReasonFencePowerOnSent    = normal("FencePowerOnSent")
	ReasonFenceLifted         = normal("FenceLifted")
	// ReasonFenceHeldUpgrade: a Harvester upgrade is under way (its nodes
	// reboot in turn), or whether one is cannot be told.
	ReasonFenceHeldUpgrade = warning("FenceHeldUpgrade")
	// ReasonFenceTaintedNotFenced: an Event on a Node that carries the
	// out-of-service taint while its server is not confirmed off (put on
	// by Harvester's node-down handling or a person, not by the fencer).
	ReasonFenceTaintedNotFenced = warning("FenceTaintedNotFenced")
	// ReasonHarvesterDrainedRestored: an Event on a Node left with
	// Harvester's drain taint and without its Drained condition, on which
	// Harvester's node-down handler fails at every pass; the condition was
	// written as Harvester writes it.
	ReasonHarvesterDrainedRestored = warning("HarvesterDrainedRestored")
)

// Reasons the boot endpoint of owned servers refuses a request for: the
// label of its refusal metric, and the Warning Event on the Instance whose
// server was named. Each is a Boot... word, so the two never mix with the
// reasons of a condition.
var (
	// ReasonBootNoOpenClaim: no Instance holds a server of that MAC, or its
	// Node has joined (nothing is served after the join).
	ReasonBootNoOpenClaim = warning("BootNoOpenClaim")
	// ReasonBootOtherNIC: the request named the MAC of another NIC of a
	// claimed server, not its management NIC: the server boots from the
	// network on the wrong port, or its Inventory names the wrong MAC.
	ReasonBootOtherNIC = warning("BootOtherNIC")
	// ReasonBootUUIDMismatch: the SMBIOS UUID iPXE reported is not the
	// one the server's BMC reported.
	ReasonBootUUIDMismatch = warning("BootUUIDMismatch")
	// ReasonBootNonceMismatch: a configuration URL not of the open claim
	// (an older claim's, or made up).
	ReasonBootNonceMismatch = warning("BootNonceMismatch")
	// ReasonBootInvalidMAC: the request named no MAC that could be read.
	ReasonBootInvalidMAC = warning("BootInvalidMAC")
	// ReasonBootUnknownPath: a path the endpoint does not serve.
	ReasonBootUnknownPath = warning("BootUnknownPath")
	// ReasonBootScriptFailed: the release the claim installs is not known
	// any more (the cluster's server-version named no release after the
	// server was booted).
	ReasonBootScriptFailed = warning("BootScriptFailed")
	// ReasonBootConfigFailed: the install configuration could not be built
	// right now (not a refusal: the installer may ask again).
	ReasonBootConfigFailed = warning("BootConfigFailed")
	// ReasonBootNoLeader: a replica that does not lead found no leader to
	// forward the request to (none, its lease ran out, or its identity
	// names no address), and answered 503.
	ReasonBootNoLeader = warning("BootNoLeader")
	// ReasonBootLeaderUnreachable: a replica that does not lead forwarded
	// the request, and the leader did not answer (502).
	ReasonBootLeaderUnreachable = warning("BootLeaderUnreachable")
)
