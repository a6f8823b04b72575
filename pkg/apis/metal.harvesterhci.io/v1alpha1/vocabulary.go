// Package v1alpha1 is Harvester Seeder's API, metal.harvesterhci.io/v1alpha1,
// as far as the addon serves it: the Inventory kind and the words Harvester
// and Seeder read in it.
package v1alpha1

import "time"

// The words Harvester and Seeder use for Inventories. Harvester's node
// actions, its UI and Seeder compare against these exact strings, so they
// are part of the API, not the addon's choice.

// InventoryNamespace is the only namespace whose Inventories are served:
// Harvester's node actions look up the Inventory named after a node there,
// and the UI writes it there. The chart's admission policy refuses
// Inventories elsewhere, and the controller ignores any that got in before.
const InventoryNamespace = "harvester-system"

// Annotations the UI writes on the Inventory of a node.
const (
	// AnnotationLocalInventory marks an Inventory of a node of this cluster
	// (Seeder's embedded mode), as opposed to a server Seeder provisions.
	AnnotationLocalInventory = "metal.harvesterhci.io/local-inventory"
	// AnnotationLocalNodeName names the node; the UI writes it when it
	// creates the Inventory, which it also names after the node.
	AnnotationLocalNodeName = "metal.harvesterhci.io/local-node-name"
)

// InventoryNodeReady is the status.status Harvester's powerActionPossible
// requires before it offers power actions.
const InventoryNodeReady InventoryWorkflowStatus = "inventoryNodeReady"

// What status.status says while an Inventory is not ready: Harvester's
// powerActionPossible answers 409 with this word in its message, and the
// INVENTORYSTATUS column shows it. Seeder leaves the field empty instead;
// any value but inventoryNodeReady means not ready to Harvester.
const (
	// InventoryBMCNotContacted: the BMC has not been tried yet.
	InventoryBMCNotContacted InventoryWorkflowStatus = "bmcNotContacted"
	// InventoryWrongNamespace: the Inventory is outside harvester-system,
	// where Harvester never looks; the addon does nothing with it.
	InventoryWrongNamespace InventoryWorkflowStatus = "wrongNamespace"
	// InventoryNodeNameMismatch: its local-node-name annotation names
	// another node than its own name.
	InventoryNodeNameMismatch InventoryWorkflowStatus = "nodeNameMismatch"
	// InventoryNodeProvisioned: its node is one of the addon's own
	// servers, whose Instance reports the hardware.
	InventoryNodeProvisioned InventoryWorkflowStatus = "nodeProvisionedByAddon"
	// InventoryCredentialsMissing: the Secret is not named, missing, or
	// lacks username or password.
	InventoryCredentialsMissing InventoryWorkflowStatus = "credentialsMissing"
	// InventoryBMCUnreachable: nothing answered at the BMC's address.
	InventoryBMCUnreachable InventoryWorkflowStatus = "bmcUnreachable"
	// InventoryBMCProtocolMismatch: something answered, in another
	// protocol than the port chose (see Connection.Protocol).
	InventoryBMCProtocolMismatch InventoryWorkflowStatus = "bmcProtocolMismatch"
	// InventoryBMCCertificateInvalid: the Redfish BMC's certificate is not
	// trusted (set caBundle, or insecureTLS).
	InventoryBMCCertificateInvalid InventoryWorkflowStatus = "bmcCertificateInvalid"
	// InventoryBMCCertificateChanged: the Redfish BMC presented another
	// certificate than the one trusted before: a possible interception,
	// refused until a person accepts the new one.
	InventoryBMCCertificateChanged InventoryWorkflowStatus = "bmcCertificateChanged"
	// InventoryBMCAuthenticationFailed: the BMC refused the credentials.
	InventoryBMCAuthenticationFailed InventoryWorkflowStatus = "bmcAuthenticationFailed"
	// InventoryBMCError: the BMC answered with an error, or too slowly.
	InventoryBMCError InventoryWorkflowStatus = "bmcError"
)

// Power operations Harvester's powerAction writes to spec.powerActionRequested.
const (
	PowerOperationShutdown = "shutdown"
	PowerOperationPowerOn  = "poweron"
	PowerOperationReboot   = "reboot"
)

// IsPowerOperation reports whether op is one of the power operations.
func IsPowerOperation(op string) bool {
	switch op {
	case PowerOperationShutdown, PowerOperationPowerOn, PowerOperationReboot:
		return true
	}
	return false
}

// Keys of the BMC credentials Secret (spec.baseboardSpec.connection.authSecretRef).
const (
	SecretUsernameKey = "username"
	SecretPasswordKey = "password"
)

// How a power request ended (status.powerAction.actionStatus). Either lets
// Harvester accept the next request.
const (
	ActionStatusComplete = "complete"
	ActionStatusFailed   = "failed"
)

// The Harvester Addon whose spec.enabled turns the UI's Out-of-Band Access
// tab and the node power actions on. Harvester hard-codes its name and
// namespace, so the addon's seeder mode is installed through it.
const (
	SeederAddonName      = "harvester-seeder"
	SeederAddonNamespace = "harvester-system"
)

// Seeder applies its CRDs itself (wrangler apply) and marks each with this
// annotation; an Inventory CRD carrying it was applied by the real Seeder,
// which may have gone since: disabling its Addon leaves its CRDs.
const (
	SeederCRDOwnerAnnotation = "objectset.rio.cattle.io/id"
	SeederCRDOwnerID         = "seeder-crd"
)

// The CRDs Seeder leaves: the Inventory CRD when Seeder applied it, and the
// BMC machines of Tinkerbell's rufio, which only Seeder installs in a
// Harvester cluster.
const (
	InventoryCRDName = "inventories.metal.harvesterhci.io"
	RufioMachinesCRD = "machines.bmc.tinkerbell.org"
	// CRDAPIVersion and CRDKind name a CRD in an Event.
	CRDAPIVersion = "apiextensions.k8s.io/v1"
	CRDKind       = "CustomResourceDefinition"
)

// Why a BMC certificate is trusted (status.hardware.bmc.certificate.trustedBy).
const (
	CertificateTrustedFirstUse = "firstUse"
	CertificateTrustedAccepted = "accepted"
	CertificateTrustedVerified = "verified"
)

// SeederLeaseName is the leader-election Lease Seeder's controller renews
// every few seconds while it runs, in the namespace of its Addon: the one
// sign that tells Seeder running from what it left behind (its Deployment
// shares its name with the addon's own when the addon is installed as the
// harvester-seeder Addon).
const SeederLeaseName = "28b21117.harvesterhci.io"

// Seeder's admission webhook: a ValidatingWebhookConfiguration of this name
// (failurePolicy Fail) on Inventory creates and updates, calling Service
// harvester-system/harvester-seeder, applied with the CA Secret Seeder's
// webhook server makes as its object-set owner, not by Helm: it outlives
// Seeder's Addon.
const (
	SeederWebhookName     = "harvester-seeder"
	SeederWebhookService  = "harvester-seeder"
	SeederWebhookCASecret = "harvester-seeder-ca" //nolint:gosec // G101: a Secret's name, not a credential
	// The object-set annotations naming the configuration's owner.
	ObjectSetOwnerNameAnnotation      = "objectset.rio.cattle.io/owner-name"
	ObjectSetOwnerNamespaceAnnotation = "objectset.rio.cattle.io/owner-namespace"
	ObjectSetOwnerGVKAnnotation       = "objectset.rio.cattle.io/owner-gvk"
	// SecretOwnerGVK is how the annotation names a Secret.
	SecretOwnerGVK = "/v1, Kind=Secret" //nolint:gosec // G101: how an annotation names the Secret kind, not a credential
)

// SeederFinalizer is the finalizer Seeder's embedded mode puts on every
// Inventory it handles; only Seeder removes it, so once Seeder is gone an
// Inventory being deleted would wait for ever.
const SeederFinalizer = "finalizer.inventory.metal.harvesterhci.io"

// SeederConditionTypes are the condition types Seeder writes into an
// Inventory's status (wrangler conditions of its rufio machine and jobs).
// They describe objects nothing reads once Seeder is gone; one that Seeder
// left with reason Error would hold the UI's error banner for ever.
var SeederConditionTypes = []string{
	"bmcObjectCreated", "bmcJobSubmitted", "bmcJobCompleted", "bmcJobErrorr", "tinkWorkflowCreated",
	"inventoryAllocatedToCluster", "inventoryFreed", "harvesterCreateNode", "harvesterJoinNode",
	"machineNotContactable", "tinkHardwareCreated", "tinkTemplateCreated", "clusterCleanupSubmitted",
}

// InventoryKind is the kind's name, as an Event names it.
const InventoryKind = "Inventory"

// DefaultPollingInterval is spec.events.pollingInterval's default: how
// often a BMC is read when the Inventory does not say.
const DefaultPollingInterval = time.Hour

// The bounds a spec.events.pollingInterval is read within: a value the UI
// accepts outside them is read as the nearest one.
const (
	MinPollingInterval = time.Second
	MaxPollingInterval = 24 * time.Hour
)

// The words Seeder writes in an AddressPool's status; its controllers
// compare against them.
const (
	// PoolReady: an address is left to hand out.
	PoolReady PoolStatus = "poolReady"
	// PoolExhausted: every address is held.
	PoolExhausted PoolStatus = "poolExhausted"
)

// What an AddressPool's addressAllocation says holds an address.
const (
	// AllocationKindInventory: a server's management address, named by its
	// Inventory. The addon records its servers' addresses so, as Seeder
	// records those of the nodes it provisions.
	AllocationKindInventory = "inventory"
	// AllocationKindCluster: a Seeder cluster's VIP.
	AllocationKindCluster = "cluster"
	// AllocationKindReserved: one of spec.reservedAddresses, recorded under
	// the name and namespace below.
	AllocationKindReserved = "reserved"
	// AllocationReservedName and AllocationReservedNamespace are what
	// Seeder records a reserved address under.
	AllocationReservedName      = "reservedAddress"
	AllocationReservedNamespace = "reserved"
)
