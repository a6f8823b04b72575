package v1

import "strings"

// Labels and annotations the addon puts on Kubernetes objects, and reads
// back. Users and other tools select on them, so they are API.
const (
	// LabelPool is set on every Instance (and on its Node) with the pool name.
	LabelPool = "equinix.harvesterhci.io/pool"
	// LabelInstance is set on the Node of an Instance (through the install
	// configuration's os.labels, so the kubelet registers with it) and on the
	// Instance's Secrets. A Node without it is never touched by the addon.
	LabelInstance = "equinix.harvesterhci.io/instance"
	// LabelClaimedBy is set on the Inventory of a server people own that an
	// Instance claimed, naming the Instance; AnnotationClaimUID carries the
	// Instance's UID. A claimed Inventory is no other Instance's to pick, and
	// an Instance whose status write was lost finds its server again by them.
	LabelClaimedBy = "equinix.harvesterhci.io/claimed-by"
	// LabelQuarantined (value "true") sets a server you own aside: it
	// failed to install or join remediation.quarantineAfter times in a
	// row, and no pool claims it until a person removes the label.
	// AnnotationFailedInstalls counts its failures in a row (a join resets
	// it); AnnotationQuarantineReason says why it was set aside.
	LabelQuarantined           = "equinix.harvesterhci.io/quarantined"
	AnnotationFailedInstalls   = "equinix.harvesterhci.io/failed-installs"
	AnnotationQuarantineReason = "equinix.harvesterhci.io/quarantine-reason"
	AnnotationClaimUID         = "equinix.harvesterhci.io/claim-uid"
	// AnnotationBootFirmware on an Inventory chooses the firmware its
	// server network-boots with when a pool claims it: UEFI or Legacy
	// (BootFirmwareUEFI, BootFirmwareLegacy), over the pool's
	// spec.servers.bootFirmware. An annotation rather than a field:
	// Seeder's kind stays Seeder's, and the Inventory CRD, which Helm
	// installs once and never updates, would prune a new field on a
	// cluster that installed an older one.
	AnnotationBootFirmware = "equinix.harvesterhci.io/boot-firmware"
	// LabelDeviceID carries the Metal device ID on the Node.
	LabelDeviceID = "equinix.harvesterhci.io/device-id"
	// LabelSecret marks the Secrets the addon reads or writes, and is the
	// selector of its Secret cache: Secrets without it never enter the
	// process. Credentials Secrets (Metal token and project, join token)
	// carry SecretCredentials; the generated console passwords SecretConsole.
	LabelSecret = "equinix.harvesterhci.io/secret" //nolint:gosec // G101: a label's name, not a credential

	// AnnotationTemplateHash is the hash of the server-shaping part of the
	// pool template an Instance was made from.
	AnnotationTemplateHash = "equinix.harvesterhci.io/template-hash"
	// AnnotationDelete marks an Instance to go first when its pool scales down.
	AnnotationDelete = "equinix.harvesterhci.io/delete"
	// AnnotationSkipRemediation keeps an unhealthy Instance from being replaced.
	AnnotationSkipRemediation = "equinix.harvesterhci.io/skip-remediation"
	// Node annotations for people: a providerID-style device ID, the plan,
	// the metro and the billing cycle.
	AnnotationProviderID   = "equinix.harvesterhci.io/provider-id"
	AnnotationPlan         = "equinix.harvesterhci.io/plan"
	AnnotationMetro        = "equinix.harvesterhci.io/metro"
	AnnotationBillingCycle = "equinix.harvesterhci.io/billing-cycle"

	// Hardware facts on Nodes, for people and for the Harvester UI's host
	// page, which reads the three unprefixed labels (Seeder's keys). A fact
	// the provider does not report has no label or annotation.
	LabelManufacturer        = "manufacturer"
	LabelModel               = "model"
	LabelSerialNumber        = "serialNumber"
	AnnotationCPUCount       = "equinix.harvesterhci.io/cpu-count"
	AnnotationCPUs           = "equinix.harvesterhci.io/cpus"
	AnnotationMemory         = "equinix.harvesterhci.io/memory"
	AnnotationDrives         = "equinix.harvesterhci.io/drives"
	AnnotationNICs           = "equinix.harvesterhci.io/nics"
	AnnotationBIOS           = "equinix.harvesterhci.io/bios-version"
	AnnotationHardwareSource = "equinix.harvesterhci.io/hardware-source"
	// AnnotationMachineEventID is set on each Kubernetes Event forwarded
	// from a machine's event log: the provider's ID of that event.
	AnnotationMachineEventID = "equinix.harvesterhci.io/machine-event-id"
	// AnnotationAcceptBMCCertificate, on an Inventory, names by its SHA-256
	// fingerprint a certificate a person accepts for the Redfish BMC: one
	// that replaced the certificate trusted before (a renewed or
	// regenerated one) is refused until it is named here. Only a person
	// writes it; the controller reads it.
	AnnotationAcceptBMCCertificate = "equinix.harvesterhci.io/accept-bmc-certificate"

	// Well-known labels the addon fills on its Nodes, as a cloud provider
	// would: the plan, the metro, and the facility (data centre) as the zone.
	LabelInstanceType = "node.kubernetes.io/instance-type"
	LabelRegion       = "topology.kubernetes.io/region"
	LabelZone         = "topology.kubernetes.io/zone"

	// ProviderIDPrefix starts a Node's spec.providerID, followed by the
	// device ID: the form the Equinix Metal cloud controller manager and
	// the tools built on it read.
	ProviderIDPrefix = "equinixmetal://"

	// AnnotationDeviceID is set by a person on a Node the addon did not
	// provision (the first Harvester node, usually) to name its Metal
	// device, when the device's addresses do not identify it. The addon
	// never writes it; on its own Nodes the same key is a label.
	AnnotationDeviceID = "equinix.harvesterhci.io/device-id"
	// AnnotationBGPDevice marks a Node whose metal.equinix.com BGP
	// annotations the addon wrote, with the device they describe: only
	// those are ever removed, never a cloud provider's.
	AnnotationBGPDevice = "equinix.harvesterhci.io/bgp-device"
	// LabelElasticIPFor marks the ElasticIP the addon made itself, with
	// what it follows (ElasticIPForVIP).
	LabelElasticIPFor = "equinix.harvesterhci.io/elasticip-for"
	// AnnotationVIPHost is where kube-vip (ARP mode) names the node that
	// holds a Service's address.
	AnnotationVIPHost = "kube-vip.io/vipHost"
)

// ElasticIPForVIP is the value of LabelElasticIPFor on the cluster VIP's
// ElasticIP, which is named VIPElasticIPName. ElasticIPForService is its
// value on the ElasticIP of a LoadBalancer Service's address of an
// ElasticIPPool, which LabelElasticIPPool names.
const (
	ElasticIPForVIP     = "cluster-vip"
	VIPElasticIPName    = "cluster-vip"
	ElasticIPForService = "service"
)

// LabelElasticIPPool marks what the addon made for an ElasticIPPool (its
// IPPool, and the ElasticIP of each Service's address), with the pool's name.
// An IPPool without it is never touched.
const LabelElasticIPPool = "equinix.harvesterhci.io/elasticippool"

// FinalizerElasticIPPool keeps an ElasticIPPool until its ElasticIPs, its
// IPPool and its block are gone (wrangler's name for the pool's remove
// handler).
const FinalizerElasticIPPool = "wrangler.cattle.io/elasticippool-remove"

// The Service of the cluster VIP: Harvester makes it from ConfigMap
// harvester-system/vip, and kube-vip names the VIP's holder on it.
const (
	VIPServiceNamespace = "kube-system"
	VIPServiceName      = "ingress-expose"
)

// The ConfigMaps the addon keeps in its namespace (the chart's RBAC grants
// their updates by name).
const (
	// ConfigMapLedger remembers every Equinix Metal project and metro the
	// addon made objects in, for the orphan sweep.
	ConfigMapLedger = "harvester-equinix-addon-ledger"
	// ConfigMapDeviceEvents keeps, per Metal project, the time up to which
	// the project's event log was read and forwarded, so that a restarted
	// controller, or a new leader, reads on from there.
	ConfigMapDeviceEvents = "harvester-equinix-addon-device-events"
)

// Values of LabelSecret.
const (
	SecretCredentials = "credentials"
	SecretConsole     = "console-password"
)

// Finalizers the addon stores. wrangler names a remove handler's finalizer
// after the handler, so these spell the handler names and never change: a
// renamed one would strand every object that carries the old one.
const (
	// FinalizerInstance keeps an Instance until its device, VLAN use, console
	// Secret and Node are released. Pools create their Instances with it, so
	// that adding it costs no write of its own.
	FinalizerInstance = "wrangler.cattle.io/instance-remove"
	// FinalizerInstanceOwned is FinalizerInstance of a server people own:
	// the seeder mode's, which gives the server back (powered off, its
	// Inventory free) before the Instance goes.
	FinalizerInstanceOwned = "wrangler.cattle.io/instance-owned-remove"
)

// Tags on Metal devices, VLANs and IP reservations. They are how the addon
// finds what it made: adoption after a lost create, the orphan sweep, and
// cleanup. A Metal object without the cluster tag is never touched.
const (
	tagPrefix = "equinix.harvesterhci.io/"
	// TagCluster prefixes the ID of the cluster that made the object.
	TagCluster = tagPrefix + "cluster="
	// TagPool prefixes the pool a device was made for.
	TagPool = tagPrefix + "pool="
	// TagInstance prefixes the UID of the Instance a device was made for.
	TagInstance = tagPrefix + "instance="
	// TagElasticIPPool prefixes the UID of the ElasticIPPool a block was
	// reserved for.
	TagElasticIPPool = tagPrefix + "elasticippool="
)

// ClusterTag marks objects of this cluster.
func ClusterTag(clusterID string) string { return TagCluster + clusterID }

// PoolTag marks a pool's devices.
func PoolTag(pool string) string { return TagPool + pool }

// ElasticIPPoolTag marks an ElasticIPPool's block, by the pool's UID, so a
// pool made again under the same name never takes an old block.
func ElasticIPPoolTag(uid string) string { return TagElasticIPPool + uid }

// InstanceTag marks an Instance's device, by the Instance UID, so a recreated
// Instance of the same name never adopts an old device.
func InstanceTag(uid string) string { return TagInstance + uid }

// TagValue returns the value of the first tag with the prefix (e.g. TagCluster).
func TagValue(tags []string, prefix string) (string, bool) {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			return v, true
		}
	}
	return "", false
}

// TaintOutOfServiceValue is the value of Kubernetes's out-of-service taint
// (corev1.TaintNodeOutOfService, effect NoExecute) the fencing chain puts
// on a Node whose server it switched off: the value Kubernetes documents
// for a node that was shut down.
const TaintOutOfServiceValue = "nodeshutdown"
