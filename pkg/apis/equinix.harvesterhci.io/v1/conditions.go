// Package v1 is the addon's API, equinix.harvesterhci.io/v1: its kinds and
// the vocabulary every chain shares (conditions, reasons, labels,
// annotations, tags).
package v1

// Condition types. They are metav1.Condition entries, not wrangler's
// genericcondition: Kubernetes API conventions (and `kubectl describe` readers)
// expect observedGeneration on each condition, which wrangler's reflection-based
// condition.Cond cannot write. Helpers live in pkg/conditions.
const (
	// InstancePool conditions.

	// PoolReady is True when every requested Instance is managed with a Ready node.
	PoolReady = "Ready"
	// PoolCredentialsReady is False when the pool's Metal credentials Secret is
	// missing, incomplete or refused by the API.
	PoolCredentialsReady = "CredentialsReady"
	// PoolServersAvailable is False while Instances of a pool of servers
	// people own wait for a free server (an Inventory its selector chooses).
	PoolServersAvailable = "ServersAvailable"
	// PoolJoinInfoReady is False when the cluster URL or join token cannot be found.
	PoolJoinInfoReady = "JoinInfoReady"
	// PoolInstallDiskFits is False while the pool's plan and install device
	// cannot take its Harvester version, so no server is created; absent
	// otherwise.
	PoolInstallDiskFits = "InstallDiskFits"
	// PoolScalingUp is True while Instances are being added.
	PoolScalingUp = "ScalingUp"
	// PoolScalingDown is True while Instances are being removed.
	PoolScalingDown = "ScalingDown"
	// PoolRollingOut is True while servers made from an older template are replaced.
	PoolRollingOut = "RollingOut"
	// PoolRemediating is True while an unhealthy server is being replaced.
	PoolRemediating = "Remediating"
	// PoolRemediationBlocked is True when an unhealthy server is due for
	// replacement but a guard holds it back; the reason says which.
	PoolRemediationBlocked = "RemediationBlocked"
	// PoolProvisioningFailed is True when MaxProvisionAttempts servers in a row failed
	// to join; the pool stops replacing them until its spec changes.
	PoolProvisioningFailed = "ProvisioningFailed"

	// Instance conditions, in the order the provisioning chain sets them.

	// InstanceCredentialsReady mirrors the pool's credentials for this server.
	InstanceCredentialsReady = "CredentialsReady"
	// InstanceDeviceCreated is True once the Metal device exists (created or adopted).
	InstanceDeviceCreated = "DeviceCreated"
	// InstanceServerClaimed is True once a server people own (an Inventory)
	// is claimed for the Instance; False while none is free.
	InstanceServerClaimed = "ServerClaimed"
	// InstanceDeviceActive is True while the device is active.
	InstanceDeviceActive = "DeviceActive"
	// InstanceNetworkConfigured is True once the ports match the network type and
	// VLANs; the install configuration waits for it.
	InstanceNetworkConfigured = "NetworkConfigured"
	// InstanceInstallConfigured is True once the installer iPXE script and the join
	// configuration are on the device.
	InstanceInstallConfigured = "InstallConfigured"
	// InstanceInstalling is True from the installer start until the node joins.
	InstanceInstalling = "Installing"
	// InstanceNodeJoined is True once a Node for this server exists.
	InstanceNodeJoined = "NodeJoined"
	// InstanceReady is True while the server is managed with a Ready node.
	InstanceReady = "Ready"
	// InstanceDeleting is set while the server is being removed.
	InstanceDeleting = "Deleting"
	// InstanceBootMediaEjected is set on a server people own that booted
	// from virtual media: True once the image the addon inserted left its
	// BMC's virtual CD, False while the BMC refuses to eject it.
	InstanceBootMediaEjected = "BootMediaEjected"

	// Conditions of both kinds, derived from the others on every status write
	// for readers that know none of the addon's own types: wrangler's summary
	// (the Harvester UI's state badge) and kstatus read Reconciling=True as in
	// progress and Stalled=True as an error carrying its message.

	// ConditionReconciling is True while the object is on its way to its
	// desired state and nothing needs a person.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the object cannot progress until a person
	// acts; its reason and message are the blocking condition's.
	ConditionStalled = "Stalled"
	// ElasticIP conditions.

	// ElasticIPReady is True while the address is assigned to the server of
	// the node kube-vip names.
	ElasticIPReady = "Ready"
	// ElasticIPCredentialsReady is False when the Secret is missing or its
	// credentials are refused.
	ElasticIPCredentialsReady = "CredentialsReady"
	// ElasticIPReserved is True when the address lies in a reservation of
	// the project.
	ElasticIPReserved = "Reserved"
	// ElasticIPHostMatched is True when kube-vip names a node and that node's
	// server is known; False says what is missing.
	ElasticIPHostMatched = "HostMatched"
	// ElasticIPHostHealthy is False while the node kube-vip names is not
	// Ready, cordoned or in maintenance and kube-vip has not moved away.
	ElasticIPHostHealthy = "HostHealthy"

	// ElasticIPPool conditions.

	// ElasticIPPoolReady is True while the block is reserved and offered
	// as an IPPool.
	ElasticIPPoolReady = "Ready"
	// ElasticIPPoolCredentialsReady is False when the Secret is missing or
	// its credentials are refused.
	ElasticIPPoolCredentialsReady = "CredentialsReady"
	// ElasticIPPoolReserved is True once Equinix Metal granted the block.
	ElasticIPPoolReserved = "Reserved"
	// ElasticIPPoolOffered is True while the IPPool offers the block.
	ElasticIPPoolOffered = "Offered"
	// InstancePowerSynced is True once the server's power is as its spec
	// asks (spec.powerState, spec.rebootRequestedAt); False while a power
	// request waits (for maintenance mode, or a retry) or is under way.
	// It appears with the first power request.
	InstancePowerSynced = "PowerSynced"

	// Inventory conditions (Seeder's Inventory, served in the hardware
	// mode).

	// BMCNodeFound is True while the Inventory's node exists and is not one
	// of the addon's own servers; False says which (a server without a
	// node, an annotation naming another node, an Instance's node).
	BMCNodeFound = "NodeFound"
	// BMCCredentialsReady is False when the credentials Secret is missing,
	// unlabelled or lacks username or password.
	BMCCredentialsReady = "CredentialsReady"
	// BMCReachable is True once the BMC answered in its protocol over a
	// trusted connection; False names what failed (unreachable, another
	// protocol, an untrusted certificate, a BMC error).
	BMCReachable = "Reachable"
	// BMCAuthenticated is True once the BMC took the credentials, False when
	// it refused them.
	BMCAuthenticated = "Authenticated"
	// InventorySchemaCurrent is False while the live Inventory CRD lacks
	// fields of the addon's schema that the addon could not add (Seeder's
	// schema, with Seeder running or the update refused): the apiserver
	// drops them from every write. Absent otherwise.
	InventorySchemaCurrent = "SchemaCurrent"
	// InventoryQuarantined is True while the server is set aside (label
	// LabelQuarantined): it failed to install or join too many times in a
	// row, and no pool claims it until a person removes the label; the
	// message says how many failures and how. Absent otherwise.
	InventoryQuarantined = "Quarantined"
	// BMCEventLogAvailable is True once a poll read the BMC's event log,
	// False when the BMC offers none the addon can read (its message says
	// what the BMC has); health changes are reported either way.
	BMCEventLogAvailable = "EventLogAvailable"
	// BMCPowerSynced is the power condition of the hardware chain, as on an
	// Instance.
	BMCPowerSynced = InstancePowerSynced
	// BMCFenced is the fencing chain's (--fencing): True while the node's
	// server is switched off by the addon and its Node carries the
	// out-of-service taint; Unknown while the power-off is sent and not yet
	// seen; False while the node is NotReady but not fenced (its grace
	// period, or a guard: the reason says which), or after the fence was
	// lifted. It appears when the node first goes NotReady.
	BMCFenced = "Fenced"
)

// NodeHardwareHealthy is the condition the hardware chain puts on a Node
// whose server's BMC reports its health (a corev1.NodeCondition, named as
// node-problem-detector's are): True while every part the BMC reports is
// OK, False while one is Warning or Critical or predicts its failure (the
// message names them), Unknown while the BMC cannot be read or reports no
// part's health. A Node whose machine reports no health has none.
const NodeHardwareHealthy = "HardwareHealthy"

// Phases shown in the STATUS column.
const (
	PhasePending      = "pending"
	PhaseProvisioning = "provisioning"
	PhaseNetworking   = "networking"
	PhaseInstalling   = "installing"
	PhaseJoining      = "joining"
	PhaseManaged      = "managed"
	PhaseUnhealthy    = "unhealthy"
	// PhaseOff is a joined server switched off on request
	// (spec.powerState: off): not unhealthy, never replaced.
	PhaseOff      = "off"
	PhaseFailed   = "failed"
	PhaseDeleting = "deleting"

	PoolPhasePending      = "pending"
	PoolPhaseProvisioning = "provisioning"
	PoolPhaseReady        = "ready"
	PoolPhaseScaling      = "scaling"
	PoolPhaseDegraded     = "degraded"
	PoolPhaseFailed       = "failed"
	PoolPhaseDeleting     = "deleting"

	ElasticIPPhasePending  = "pending"
	ElasticIPPhaseAssigned = "assigned"
	ElasticIPPhaseMoving   = "moving"
	ElasticIPPhaseWaiting  = "waiting"
	ElasticIPPhaseError    = "error"

	ElasticIPPoolPhasePending  = "pending"
	ElasticIPPoolPhaseReady    = "ready"
	ElasticIPPoolPhaseWaiting  = "waiting"
	ElasticIPPoolPhaseDeleting = "deleting"
	ElasticIPPoolPhaseError    = "error"
)
