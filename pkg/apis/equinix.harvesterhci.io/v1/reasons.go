package v1

import corev1 "k8s.io/api/core/v1"

// Reasons of the addon's conditions and Events. Each is CamelCase and names
// what happened; the message beside it is a sentence for `kubectl describe`.
// EventType says which of them need a person.
const (
	// Credentials and the cluster's join information.
	ReasonCredentialsReady   = "CredentialsReady"
	ReasonCredentialsMissing = "CredentialsMissing"
	ReasonCredentialsInvalid = "CredentialsInvalid"
	ReasonSecretNotFound     = "SecretNotFound"
	ReasonSecretIncomplete   = "SecretIncomplete"
	ReasonSecretNotLabelled  = "SecretNotLabelled"
	ReasonProjectMismatch    = "ProjectMismatch"
	ReasonProjectChanged     = "ProjectChanged"
	ReasonJoinInfoReady      = "JoinInfoReady"
	ReasonJoinInfoMissing    = "JoinInfoMissing"
	ReasonClusterURLMissing  = "ClusterURLMissing"
	ReasonJoinTokenMissing   = "JoinTokenMissing"
	ReasonVersionUnknown     = "VersionUnknown"
	ReasonIPXEURLMissing     = "IPXEURLMissing"
	ReasonReleaseNotFound    = "ReleaseNotFound"
	// ReasonInstallDiskTooSmall and ReasonInstallDiskMissing: the plan's
	// install disk cannot take the Harvester version, or is not on the plan.
	ReasonInstallDiskTooSmall = "InstallDiskTooSmall"
	ReasonInstallDiskMissing  = "InstallDiskMissing"

	// The device.
	ReasonDeviceCreated     = "DeviceCreated"
	ReasonDeviceAdopted     = "DeviceAdopted"
	ReasonCreateSent        = "CreateSent"
	ReasonCreateUnconfirmed = "CreateUnconfirmed"
	ReasonDuplicateDevices  = "DuplicateDevices"
	ReasonInvalidRequest    = "InvalidRequest"
	ReasonNoCapacity        = "NoCapacity"
	// ReasonReservationUnavailable: the server's hardware reservation
	// cannot take it (used, another plan or metro, a spare, none left).
	ReasonReservationUnavailable = "ReservationUnavailable"
	ReasonThrottled              = "Throttled"
	ReasonProvisioning           = "Provisioning"
	ReasonDeviceActive           = "DeviceActive"
	ReasonProvisionFailed        = "ProvisionFailed"
	ReasonDeviceGone             = "DeviceGone"
	// Servers people own: the claim of an Inventory, its one-time network
	// boot and power through the BMC, and its release.
	ReasonServerClaimed  = "ServerClaimed"
	ReasonNoFreeServer   = "NoFreeServer"
	ReasonServerGone     = "ServerGone"
	ReasonServersFree    = "ServersFree"
	ReasonNetworkBoot    = "NetworkBoot"
	ReasonBMCFailed      = "BMCFailed"
	ReasonServerReleased = "ServerReleased"
	ReasonPoweringOff    = "PoweringOff"
	ReasonPowerCycled    = "PowerCycled"
	// ReasonServerInPool: a power request on the Inventory of a server a
	// pool claimed is refused; the pool switches its power.
	ReasonServerInPool = "ServerInPool"
	ReasonPoweredOff   = "PoweredOff"
	ReasonReinstalling = "Reinstalling"

	// The networking chain.
	ReasonConverged   = "Converged"
	ReasonConverging  = "Converging"
	ReasonRetrying    = "Retrying"
	ReasonStepFailed  = "StepFailed"
	ReasonPortMissing = "PortMissing"
	ReasonVLANCreated = "VLANCreated"
	ReasonVLANDeleted = "VLANDeleted"

	// The install and the node.
	ReasonInstallConfigured      = "InstallConfigured"
	ReasonInvalidConfiguration   = "InvalidConfiguration"
	ReasonPasswordSecretTaken    = "PasswordSecretTaken"
	ReasonInstallStarted         = "InstallStarted"
	ReasonInstalled              = "Installed"
	ReasonWaiting                = "Waiting"
	ReasonNodeJoined             = "NodeJoined"
	ReasonNodeNameTaken          = "NodeNameTaken"
	ReasonNodeReady              = "NodeReady"
	ReasonNodeNotReadyYet        = "NodeNotReadyYet"
	ReasonNodeNotReady           = "NodeNotReady"
	ReasonNodeGone               = "NodeGone"
	ReasonUserdataNotCleared     = "UserdataNotCleared"
	ReasonDeleting               = "Deleting"
	ReasonMaintenance            = "Maintenance"
	ReasonMaintenanceRefused     = "MaintenanceRefused"
	ReasonMaintenanceTimeout     = "MaintenanceTimeout"
	ReasonWaitingForProvisioning = "WaitingForProvisioning"
	ReasonDeviceDeleted          = "DeviceDeleted"
	ReasonNodeDeleted            = "NodeDeleted"

	// The pool.
	ReasonAllReady           = "AllReady"
	ReasonNotAllReady        = "NotAllReady"
	ReasonIdle               = "Idle"
	ReasonScalingUp          = "ScalingUp"
	ReasonScalingDown        = "ScalingDown"
	ReasonBackingOff         = "BackingOff"
	ReasonPoolDeleted        = "PoolDeleted"
	ReasonUpToDate           = "UpToDate"
	ReasonReplacingOutdated  = "ReplacingOutdated"
	ReasonRollingOut         = "RollingOut"
	ReasonReplacing          = "Replacing"
	ReasonRemediating        = "Remediating"
	ReasonNotBlocked         = "NotBlocked"
	ReasonTooManyFailures    = "TooManyFailures"
	ReasonProvisioningFailed = "ProvisioningFailed"
	ReasonVLANsChanged       = "VLANsChanged"
	ReasonTemplateChanged    = "TemplateChanged"
	// Guards that hold a due replacement back (RemediationBlocked).
	ReasonTooManyUnhealthy    = "TooManyUnhealthy"
	ReasonReplacementInFlight = "ReplacementInFlight"
	ReasonQuorumGuard         = "QuorumGuard"
	ReasonSkipAnnotation      = "SkipAnnotation"

	// The hardware chain: power requests, forwarded machine events, facts
	// and the provider taking a server back.
	ReasonMaintenanceRequired    = "MaintenanceRequired"
	ReasonPowerActionSent        = "PowerActionSent"
	ReasonPowerActionUnconfirmed = "PowerActionUnconfirmed"
	ReasonPowerActionRetrying    = "PowerActionRetrying"
	ReasonPowerActionSucceeded   = "PowerActionSucceeded"
	ReasonPowerActionFailed      = "PowerActionFailed"
	ReasonPowerActionCancelled   = "PowerActionCancelled"
	ReasonPoweredOffOnRequest    = "PoweredOffOnRequest"
	ReasonRestartingOnRequest    = "RestartingOnRequest"
	// ReasonNodeInMaintenance: the node of a server people own is not
	// Ready while in Harvester maintenance mode, where its power is a
	// person's (Harvester's power actions, through its Inventory): the pool
	// neither power-cycles nor replaces it.
	ReasonNodeInMaintenance   = "NodeInMaintenance"
	ReasonHardwareEvent       = "HardwareEvent"
	ReasonHardwareWarning     = "HardwareWarning"
	ReasonHardwareFactsFailed = "HardwareFactsFailed"
	ReasonReclaimScheduled    = "ReclaimScheduled"
	// The Node condition HardwareHealthy (False: the worst first; Unknown:
	// HardwareNotReported, or the BMC's reasons below).
	ReasonHardwareOK          = "HardwareOK"
	ReasonHardwareCritical    = "HardwareCritical"
	ReasonFailurePredicted    = "FailurePredicted"
	ReasonHardwareDegraded    = "HardwareDegraded"
	ReasonHardwareNotReported = "HardwareNotReported"

	// BMC inventories: the node, the BMC's answers and its health.
	ReasonNodeFound             = "NodeFound"
	ReasonNodeNotFound          = "NodeNotFound"
	ReasonNodeProvisioned       = "NodeProvisioned"
	ReasonDuplicateInventory    = "DuplicateInventory"
	ReasonBMCReachable          = "BMCReachable"
	ReasonBMCUnreachable        = "BMCUnreachable"
	ReasonBMCProtocolMismatch   = "BMCProtocolMismatch"
	ReasonBMCCertificateInvalid = "BMCCertificateInvalid"
	// ReasonBMCCertificateChanged: a Redfish BMC presented another
	// certificate than the one trusted; ReasonBMCCertificatePinned: the
	// first one seen is trusted from now on; ReasonBMCCertificateAccepted:
	// one a person named is.
	ReasonBMCCertificateChanged  = "BMCCertificateChanged"
	ReasonBMCCertificatePinned   = "BMCCertificatePinned"
	ReasonBMCCertificateAccepted = "BMCCertificateAccepted"
	// ReasonBMCProtocolFound: what answered at a connection that does not
	// say its protocol (port 623).
	ReasonBMCProtocolFound = "BMCProtocolFound"
	// ReasonPollingIntervalClamped: a polling interval outside the bounds
	// is read as the nearest one.
	ReasonPollingIntervalClamped = "PollingIntervalClamped"
	ReasonBMCError               = "BMCError"
	ReasonBMCNotContacted        = "BMCNotContacted"
	ReasonAuthenticated          = "Authenticated"
	ReasonAuthenticationFailed   = "AuthenticationFailed"
	ReasonEventLogRead           = "EventLogRead"
	ReasonNoEventLog             = "NoEventLog"
	// Seeder's Inventories: where one may be, its node, and the real Seeder.
	ReasonInventoryReady    = "InventoryReady"
	ReasonWrongNamespace    = "WrongNamespace"
	ReasonNodeNameMismatch  = "NodeNameMismatch"
	ReasonServerWithoutNode = "ServerWithoutNode"
	ReasonSeederInstalled   = "SeederInstalled"

	// The periodic sweep.
	ReasonOrphanDevice       = "OrphanDevice"
	ReasonOrphanDeleted      = "OrphanDeleted"
	ReasonOrphanNodeDeleted  = "OrphanNodeDeleted"
	ReasonProjectUnreachable = "ProjectUnreachable"

	// Reconciling and Stalled, when no other condition lends its reason.
	ReasonInProgress   = "InProgress"
	ReasonReconciled   = "Reconciled"
	ReasonNotStalled   = "NotStalled"
	ReasonServerFailed = "ServerFailed"
	// The ElasticIP that follows kube-vip.
	ReasonAssigned          = "Assigned"
	ReasonMoving            = "Moving"
	ReasonMoved             = "Moved"
	ReasonUnassigned        = "Unassigned"
	ReasonReserved          = "Reserved"
	ReasonNotReserved       = "NotReserved"
	ReasonAssignRefused     = "AssignRefused"
	ReasonAddressConflict   = "AddressConflict"
	ReasonHostMatched       = "HostMatched"
	ReasonNoVIPHost         = "NoVIPHost"
	ReasonServiceNotFound   = "ServiceNotFound"
	ReasonHostNotFound      = "HostNotFound"
	ReasonHostUnmatched     = "HostUnmatched"
	ReasonHostHealthy       = "HostHealthy"
	ReasonHostNotReady      = "HostNotReady"
	ReasonHostCordoned      = "HostCordoned"
	ReasonHostInMaintenance = "HostInMaintenance"
	ReasonElasticIPCreated  = "ElasticIPCreated"
	ReasonElasticIPReplaced = "ElasticIPReplaced"
	ReasonElasticIPDeleted  = "ElasticIPDeleted"
	// The ElasticIPPool and its block.
	ReasonBlockRequested = "BlockRequested"
	ReasonBlockPending   = "BlockPending"
	ReasonBlockDenied    = "BlockDenied"
	ReasonBlockGone      = "BlockGone"
	ReasonBlockReleased  = "BlockReleased"
	ReasonBlockInUse     = "BlockInUse"
	ReasonIPPoolOffered  = "IPPoolOffered"
	ReasonIPPoolTaken    = "IPPoolTaken"
	ReasonIPPoolMissing  = "IPPoolMissing"

	// BGP peering for kube-vip and load balancers, on Nodes.
	ReasonBGPPeersAnnotated = "BGPPeersAnnotated"
	ReasonBGPPeersRemoved   = "BGPPeersRemoved"
	ReasonBGPFailed         = "BGPFailed"

	// Nodes the addon initializes as a cloud provider.
	ReasonNodeInitialized    = "NodeInitialized"
	ReasonNodeNotInitialized = "NodeNotInitialized"

	// Fencing (--fencing): the Fenced condition of an Inventory, and the
	// Events on its Node.
	ReasonFenceGracePeriod     = "FenceGracePeriod"
	ReasonFenceNotNeeded       = "FenceNotNeeded"
	ReasonFenceHeldByBound     = "FenceHeldByBound"
	ReasonFenceHeldByQuorum    = "FenceHeldByQuorum"
	ReasonFenceHeldOwnNode     = "FenceHeldOwnNode"
	ReasonFenceHeldMaintenance = "FenceHeldMaintenance"
	ReasonFenceHeldBMC         = "FenceHeldBMC"
	ReasonFenceHeldPowerAction = "FenceHeldPowerAction"
	// ReasonFenceHeldJoining: the node is a pool's server that has not
	// been Ready yet; nothing runs on it, and its pool watches the install.
	ReasonFenceHeldJoining     = "FenceHeldJoining"
	ReasonFencePowerOffSending = "FencePowerOffSending"
	// ReasonFenceTainting: the server was off already; the taint is
	// being put on (the intent, stored before it).
	ReasonFenceTainting       = "FenceTainting"
	ReasonFencePowerOffSent   = "FencePowerOffSent"
	ReasonFencePowerOffFailed = "FencePowerOffFailed"
	ReasonFenced              = "Fenced"
	ReasonFencePowerOnSending = "FencePowerOnSending"
	ReasonFencePowerOnSent    = "FencePowerOnSent"
	ReasonFenceLifted         = "FenceLifted"
)

// Reasons the boot endpoint of owned servers refuses a request for: the
// label of its refusal metric, and the Warning Event on the Instance whose
// server was named. Each is a Boot... word, so the two never mix with the
// reasons of a condition.
const (
	// ReasonBootNoOpenClaim: no Instance holds a server of that MAC, or its
	// Node has joined (nothing is served after the join).
	ReasonBootNoOpenClaim = "BootNoOpenClaim"
	// ReasonBootUUIDMismatch: the SMBIOS UUID iPXE reported is not the
	// one the server's BMC reported.
	ReasonBootUUIDMismatch = "BootUUIDMismatch"
	// ReasonBootNonceMismatch: a configuration URL not of the open claim
	// (an older claim's, or made up).
	ReasonBootNonceMismatch = "BootNonceMismatch"
	// ReasonBootInvalidMAC: the request named no MAC that could be read.
	ReasonBootInvalidMAC = "BootInvalidMAC"
	// ReasonBootUnknownPath: a path the endpoint does not serve.
	ReasonBootUnknownPath = "BootUnknownPath"
	// ReasonBootScriptFailed: the claim's architecture or version has no
	// installer to boot.
	ReasonBootScriptFailed = "BootScriptFailed"
	// ReasonBootConfigFailed: the install configuration could not be built
	// right now (not a refusal: the installer may ask again).
	ReasonBootConfigFailed = "BootConfigFailed"
	// ReasonBootNoLeader: a replica that does not lead found no leader to
	// forward the request to (none, its lease ran out, or its identity
	// names no address), and answered 503.
	ReasonBootNoLeader = "BootNoLeader"
	// ReasonBootLeaderUnreachable: a replica that does not lead forwarded
	// the request, and the leader did not answer (502).
	ReasonBootLeaderUnreachable = "BootLeaderUnreachable"
)

// warnings are the reasons that need a person's attention: something to fix,
// or something the addon did on its own that a person should know about.
var warnings = map[string]bool{
	ReasonCredentialsMissing: true, ReasonCredentialsInvalid: true, ReasonSecretNotFound: true,
	ReasonSecretIncomplete: true, ReasonSecretNotLabelled: true, ReasonProjectMismatch: true,
	ReasonProjectChanged: true, ReasonJoinInfoMissing: true, ReasonClusterURLMissing: true,
	ReasonJoinTokenMissing: true, ReasonVersionUnknown: true, ReasonIPXEURLMissing: true,
	ReasonReleaseNotFound: true, ReasonInstallDiskTooSmall: true, ReasonInstallDiskMissing: true,

	ReasonCreateUnconfirmed: true, ReasonDuplicateDevices: true, ReasonInvalidRequest: true,
	ReasonNoCapacity: true, ReasonReservationUnavailable: true, ReasonProvisionFailed: true, ReasonDeviceGone: true, ReasonPoweredOff: true,
	ReasonNoFreeServer: true, ReasonServerGone: true, ReasonBMCFailed: true, ReasonServerInPool: true,

	ReasonStepFailed: true, ReasonPortMissing: true,

	ReasonInvalidConfiguration: true, ReasonPasswordSecretTaken: true, ReasonNodeNameTaken: true,
	ReasonNodeNotReady: true, ReasonNodeGone: true, ReasonUserdataNotCleared: true,
	ReasonMaintenanceRefused: true, ReasonMaintenanceTimeout: true,

	ReasonTooManyFailures: true, ReasonTooManyUnhealthy: true, ReasonReplacementInFlight: true,
	ReasonQuorumGuard: true, ReasonSkipAnnotation: true,

	ReasonMaintenanceRequired: true, ReasonPowerActionUnconfirmed: true, ReasonPowerActionRetrying: true,
	ReasonPowerActionFailed: true, ReasonHardwareWarning: true, ReasonHardwareFactsFailed: true,
	ReasonReclaimScheduled: true,

	ReasonNodeNotFound: true, ReasonNodeProvisioned: true, ReasonDuplicateInventory: true,
	ReasonBMCUnreachable: true, ReasonBMCProtocolMismatch: true, ReasonBMCCertificateInvalid: true,
	ReasonBMCCertificateChanged: true, ReasonPollingIntervalClamped: true,
	ReasonBMCError: true, ReasonAuthenticationFailed: true, ReasonNoEventLog: true,
	ReasonWrongNamespace: true, ReasonNodeNameMismatch: true, ReasonSeederInstalled: true,

	ReasonOrphanDevice: true, ReasonOrphanDeleted: true, ReasonOrphanNodeDeleted: true,
	ReasonProjectUnreachable: true,

	ReasonNotReserved: true, ReasonAssignRefused: true, ReasonAddressConflict: true,
	ReasonServiceNotFound: true, ReasonHostNotFound: true, ReasonHostUnmatched: true,
	ReasonHostNotReady: true, ReasonHostCordoned: true, ReasonHostInMaintenance: true,
	ReasonBlockDenied: true, ReasonBlockGone: true, ReasonBlockInUse: true, ReasonIPPoolTaken: true, ReasonIPPoolMissing: true,

	ReasonBGPFailed: true, ReasonNodeNotInitialized: true,

	// A dead node left unfenced, and a node the addon switched off.
	ReasonFenceHeldByBound: true, ReasonFenceHeldByQuorum: true, ReasonFenceHeldOwnNode: true,
	ReasonFenceHeldMaintenance: true, ReasonFenceHeldBMC: true, ReasonFenceHeldPowerAction: true,
	ReasonFencePowerOffFailed: true, ReasonFenced: true,

	ReasonBootNoOpenClaim: true, ReasonBootUUIDMismatch: true, ReasonBootNonceMismatch: true,
	ReasonBootInvalidMAC: true, ReasonBootUnknownPath: true, ReasonBootScriptFailed: true,
	ReasonBootConfigFailed: true, ReasonBootNoLeader: true, ReasonBootLeaderUnreachable: true,
}

// stalling are the reasons that hold an object until a person acts: fix a
// Secret, the configuration or the spec, pick another plan or metro, power a
// server on, delete a duplicate device. Health and maintenance reasons are not
// among them: they resolve on their own or the pool replaces the server.
var stalling = map[string]bool{
	ReasonCredentialsMissing: true, ReasonCredentialsInvalid: true, ReasonSecretNotFound: true,
	ReasonSecretIncomplete: true, ReasonSecretNotLabelled: true, ReasonProjectMismatch: true,
	ReasonProjectChanged: true, ReasonJoinInfoMissing: true, ReasonClusterURLMissing: true,
	ReasonJoinTokenMissing: true, ReasonVersionUnknown: true, ReasonIPXEURLMissing: true,
	ReasonReleaseNotFound: true, ReasonInstallDiskTooSmall: true, ReasonInstallDiskMissing: true,

	ReasonDuplicateDevices: true, ReasonInvalidRequest: true, ReasonNoCapacity: true,
	ReasonProvisionFailed: true, ReasonDeviceGone: true, ReasonPoweredOff: true,

	ReasonStepFailed: true, ReasonPortMissing: true,

	ReasonInvalidConfiguration: true, ReasonPasswordSecretTaken: true, ReasonNodeNameTaken: true,

	// An Inventory's BMC that cannot be used until its address, port,
	// certificate or credentials are fixed, or the BMC comes back.
	ReasonWrongNamespace: true, ReasonNodeNameMismatch: true, ReasonNodeProvisioned: true,
	ReasonBMCUnreachable: true, ReasonBMCProtocolMismatch: true, ReasonBMCCertificateInvalid: true,
	ReasonBMCCertificateChanged: true, ReasonBMCError: true, ReasonAuthenticationFailed: true,
}

// Stalls reports whether a condition with this reason, when False, holds its
// object until a person acts.
func Stalls(reason string) bool { return stalling[reason] }

// EventType is the type of the Event a reason is recorded with: Warning for
// the reasons that need a person, Normal for progress.
func EventType(reason string) string {
	if warnings[reason] {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// IsWarning reports whether a reason needs a person's attention.
func IsWarning(reason string) bool { return warnings[reason] }
