package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ipool;ipools,categories=harvester
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.count,statuspath=.status.ready
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Requested",type=integer,JSONPath=`.status.requested`
// +kubebuilder:printcolumn:name="Up-To-Date",type=integer,JSONPath=`.status.updated`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.available`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.plan`,priority=1
// +kubebuilder:printcolumn:name="Metro",type=string,JSONPath=`.spec.metro`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 54 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="pool names are DNS labels of at most 54 characters, so that server hostnames (<pool>-<8 letters>) stay within 63"
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.networkingConfiguration.type`,priority=1
// +kubebuilder:validation:XValidation:rule="!has(self.spec.servers) || !has(self.spec.hardwareReservationIDs)",message="servers chooses servers you own, so the Equinix Metal field hardwareReservationIDs cannot be set with it",fieldPath=".spec.hardwareReservationIDs"
// +kubebuilder:printcolumn:name="Off",type=integer,JSONPath=`.status.poweredOff`,priority=1

// InstancePool keeps `count` servers installed with Harvester and joined to
// this cluster: Equinix Metal devices (plan and metro), or servers you own
// (servers, Inventories claimed and booted through their BMCs).
type InstancePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InstancePoolSpec   `json:"spec"`
	Status InstancePoolStatus `json:"status,omitempty"`
}

// InstancePoolSpec is what a pool asks for: how many servers, the template
// each is made from, and how unhealthy and outdated servers are replaced.
type InstancePoolSpec struct {
	// Count is the number of servers to keep.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Count int32 `json:"count"`

	// NodeCleanupWaitInterval turns on replacement of unhealthy nodes: a node whose
	// Ready condition has not been True for this long (counted from the condition's
	// lastTransitionTime) is replaced. Unset: unhealthy nodes are only reported.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="must be at least 1m: shorter would replace servers on a passing network blip"
	// +optional
	NodeCleanupWaitInterval *metav1.Duration `json:"nodeCleanupWaitInterval,omitempty"`

	// HardwareReservationIDs are Metal hardware reservations to provision on, one per
	// server, or "next-available". Servers beyond the list are on-demand.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:Pattern=`^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|next-available)$`
	// +optional
	HardwareReservationIDs []string `json:"hardwareReservationIDs,omitempty"`

	// Remediation bounds what the controller may do to unhealthy or stuck servers.
	// +kubebuilder:default={}
	// +optional
	Remediation RemediationPolicy `json:"remediation"`

	// Rollout bounds how servers made from an older template are replaced
	// when a server-shaping field of the template changes.
	// +kubebuilder:default={}
	// +optional
	Rollout RolloutStrategy `json:"rollout"`

	InstanceTemplate `json:",inline"`
}

// RemediationPolicy holds the guards of unhealthy-node replacement.
type RemediationPolicy struct {
	// MaxUnhealthy pauses replacement while more servers than this are unhealthy,
	// so a network partition cannot wipe a pool. A number or a percentage of count,
	// rounded down but never below one server.
	// +kubebuilder:default="40%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')",message="must be a number of servers or a percentage such as 40%"
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`

	// MaxInFlight is how many replacements of one pool may run at once.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxInFlight int32 `json:"maxInFlight,omitempty"`

	// StartupTimeout is how long a new server may take from creation to a Ready
	// node before it is replaced. Bare metal installs are slow: 30m at least.
	// +kubebuilder:default="45m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	StartupTimeout *metav1.Duration `json:"startupTimeout,omitempty"`

	// MaxProvisionAttempts is how many servers in a row may fail to join before the
	// pool stops replacing them and reports ProvisioningFailed.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxProvisionAttempts int32 `json:"maxProvisionAttempts,omitempty"`

	// QuarantineAfter is, for servers you own, how many times in a row one
	// server may fail to install or join (its Instance failed, or did not
	// join within startupTimeout) before it is quarantined: its Inventory
	// is labelled equinix.harvesterhci.io/quarantined and no pool claims it
	// until a person removes that label. Unset: 2.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	QuarantineAfter int32 `json:"quarantineAfter,omitempty"`

	// MaintenanceTimeout is how long to wait for Harvester maintenance mode (VMs
	// migrated away) before a joined node's server is deleted anyway.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	MaintenanceTimeout *metav1.Duration `json:"maintenanceTimeout,omitempty"`
}

// InstancePoolStatus is what the pool has.
type InstancePoolStatus struct {
	// Status is a one-word summary: pending, provisioning, ready, scaling,
	// degraded, failed or deleting.
	// +optional
	Status string `json:"status,omitempty"`
	// Ready counts Instances that are managed with a Ready node.
	// +optional
	Ready int32 `json:"ready"`
	// Requested is spec.count as last seen by the controller.
	// +optional
	Requested int32 `json:"requested"`
	// Updated counts the servers made from the pool's current template,
	// not counting those being removed.
	// +optional
	Updated int32 `json:"updated"`
	// Available counts the ready servers whose node takes workloads: not
	// cordoned and not in Harvester maintenance mode. A rollout keeps at
	// least count - maxUnavailable of them.
	// +optional
	Available int32 `json:"available"`
	// PoweredOff counts servers switched off on request (spec.powerState:
	// off on their Instance). They are neither unhealthy nor replaced.
	// +optional
	PoweredOff int32 `json:"poweredOff,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ConsecutiveFailures counts servers in a row that failed before joining
	// (provisioning failed, or the startup timeout passed). A server that joins
	// resets it; reaching remediation.maxProvisionAttempts stops replacements.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// LastProvisionFailure is when the last server failed before joining.
	// +optional
	LastProvisionFailure *metav1.Time `json:"lastProvisionFailure,omitempty"`
	// FailedGeneration is the spec generation at which ProvisioningFailed was
	// reached; editing the pool spec lets it try again.
	// +optional
	FailedGeneration int64 `json:"failedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
