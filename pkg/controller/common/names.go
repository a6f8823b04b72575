package common

import (
	"strings"
)

// Labels and annotations on Kubernetes objects.
const (
	// LabelPool is set on every Instance (and on its Node) with the pool name.
	LabelPool = "equinix.harvesterhci.io/pool"
	// LabelInstance is set on the Node of an Instance (through the install
	// configuration's os.labels, so the kubelet registers with it) and on the
	// Instance's Secrets. A Node without it is never touched by the addon.
	LabelInstance = "equinix.harvesterhci.io/instance"
	// LabelDeviceID carries the Metal device ID on the Node.
	LabelDeviceID = "equinix.harvesterhci.io/device-id"
	// AnnotationTemplateHash is the hash of the server-shaping part of the pool
	// template an Instance was made from.
	AnnotationTemplateHash = "equinix.harvesterhci.io/template-hash"
	// AnnotationDelete marks an Instance to go first when its pool scales down.
	AnnotationDelete = "equinix.harvesterhci.io/delete"
	// AnnotationSkipRemediation keeps an unhealthy Instance from being replaced.
	AnnotationSkipRemediation = "equinix.harvesterhci.io/skip-remediation"
	// Node annotations for users (providerID-style ID, plan, metro, billing).
	AnnotationProviderID   = "equinix.harvesterhci.io/provider-id"
	AnnotationPlan         = "equinix.harvesterhci.io/plan"
	AnnotationMetro        = "equinix.harvesterhci.io/metro"
	AnnotationBillingCycle = "equinix.harvesterhci.io/billing-cycle"
	// Standard well-known labels.
	LabelInstanceType = "node.kubernetes.io/instance-type"
	LabelRegion       = "topology.kubernetes.io/region"
)

// Tags on Metal devices, VLANs and IP reservations. They are how the addon
// finds what it made: adoption after a lost create, the orphan sweep, and
// cleanup. A Metal object without the cluster tag is never touched.
const (
	tagPrefix   = "equinix.harvesterhci.io/"
	TagCluster  = tagPrefix + "cluster="
	TagPool     = tagPrefix + "pool="
	TagInstance = tagPrefix + "instance="
)

// ClusterTag marks objects of this cluster.
func ClusterTag(clusterID string) string { return TagCluster + clusterID }

// PoolTag marks a pool's devices.
func PoolTag(pool string) string { return TagPool + pool }

// InstanceTag marks an Instance's device, by the Instance UID, so a recreated
// Instance of the same name never adopts an old device.
func InstanceTag(uid string) string { return TagInstance + uid }

// TagValue returns the value of the first tag with the prefix (e.g. TagCluster).
func TagValue(tags []string, prefix string) (string, bool) {
	for _, t := range tags {
		if strings.HasPrefix(t, prefix) {
			return strings.TrimPrefix(t, prefix), true
		}
	}
	return "", false
}

// HasTag reports whether tags contains t.
func HasTag(tags []string, t string) bool {
	for _, x := range tags {
		if x == t {
			return true
		}
	}
	return false
}
