package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultBMCPollInterval is how often a BMC is read when its BMCInventory
// does not say: health and event logs change slowly, and BMCs are small
// computers that serve few requests at a time.
const DefaultBMCPollInterval = 15 * time.Minute

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=bmc,categories=harvester
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.spec.bmc.protocol`
// +kubebuilder:printcolumn:name="Power",type=string,JSONPath=`.status.powerState`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.bmc.host`,priority=1

// BMCInventory maps a Harvester node the addon did not provision to its
// baseboard management controller: the node gets the server's facts as
// labels and annotations, its health changes and event log entries as
// Events, and the same power requests as an Instance. It is cluster-scoped,
// as Nodes are, and names one Node; its credentials Secret lives in the
// addon's namespace.
type BMCInventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BMCInventorySpec   `json:"spec"`
	Status BMCInventoryStatus `json:"status,omitempty"`
}

// BMCInventorySpec names the node, its BMC and how often to read it.
//
// +kubebuilder:validation:XValidation:rule="self.nodeName == oldSelf.nodeName",message="nodeName is fixed: the event cursor belongs to one node's BMC; create another BMCInventory instead"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.rebootRequestedAt) || (has(self.rebootRequestedAt) && timestamp(self.rebootRequestedAt) >= timestamp(oldSelf.rebootRequestedAt))",message="rebootRequestedAt only moves forward: set a later time to ask for another reboot"
// +kubebuilder:validation:XValidation:rule="!has(self.powerState) || self.powerState != 'off' || !has(self.rebootRequestedAt) || (has(oldSelf.rebootRequestedAt) && self.rebootRequestedAt == oldSelf.rebootRequestedAt)",message="a server switched off cannot be rebooted: set powerState to on instead"
type BMCInventorySpec struct {
	// NodeName is the Harvester node whose server this BMC manages. At most
	// one BMCInventory may name a node: a second one is refused with a
	// condition (the older one keeps it).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`
	// BMC says how to reach the BMC.
	BMC BMCEndpoint `json:"bmc"`
	// CredentialsSecret names a Secret in the addon's namespace with keys
	// username and password, labelled equinix.harvesterhci.io/secret=credentials
	// (the addon reads no Secret without that label).
	CredentialsSecret SecretReference `json:"credentialsSecret"`
	// PollInterval is how often the BMC's health and event log are read;
	// a power request is carried out at once whatever it says.
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="pollInterval must be between 1s and 24h"
	// +optional
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// PowerSpec asks for the server's power: powerState and
	// rebootRequestedAt, as on an Instance.
	PowerSpec `json:",inline"`
}

// BMCProtocol is how a BMC is spoken to.
type BMCProtocol string

// BMC protocols.
const (
	BMCProtocolRedfish BMCProtocol = "redfish"
	BMCProtocolIPMI    BMCProtocol = "ipmi"
)

// BMCEndpoint is where a BMC listens and how its certificate is checked.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.insecureSkipVerify) && self.insecureSkipVerify && has(self.caBundle))",message="set either caBundle or insecureSkipVerify, not both"
// +kubebuilder:validation:XValidation:rule="self.protocol == 'redfish' || !((has(self.insecureSkipVerify) && self.insecureSkipVerify) || has(self.caBundle))",message="caBundle and insecureSkipVerify apply to redfish (HTTPS) only; IPMI has no TLS"
type BMCEndpoint struct {
	// Protocol is redfish (HTTPS) or ipmi (IPMI 2.0 over UDP).
	// +kubebuilder:validation:Enum=redfish;ipmi
	Protocol BMCProtocol `json:"protocol"`
	// Host is the BMC's name or IP address, without scheme, port or path.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/') && !self.contains('@') && !self.contains(' ') && !self.contains('?') && !(self.contains(':') && !self.contains('::') && self.split(':').size() == 2)",message="host is a name or an IP address, without scheme, user, port or path (put the port in port)"
	Host string `json:"host"`
	// Port defaults to 443 for redfish and 623 for ipmi.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// InsecureSkipVerify accepts any certificate (redfish). Off by default:
	// the certificate must chain to the system roots or to caBundle.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	// CABundle is PEM certificates trusted besides the system roots
	// (redfish): most BMCs ship a self-signed certificate.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.contains('-----BEGIN CERTIFICATE-----')",message="caBundle must hold PEM certificates"
	// +optional
	CABundle string `json:"caBundle,omitempty"`
}

// SubsystemHealth is the health of one group of parts.
type SubsystemHealth struct {
	// Name is Thermal, PowerSupplies, Fans, Storage, Memory or Processors.
	Name string `json:"name"`
	// State is OK, Unknown, Warning or Critical.
	State string `json:"state"`
	// Message names the parts that are not OK.
	// +optional
	Message string `json:"message,omitempty"`
}

// BMCInventoryStatus reports the BMC and the server behind it.
type BMCInventoryStatus struct {
	// Health is the server's overall health as the BMC last reported it:
	// OK, Unknown, Warning or Critical.
	// +optional
	Health string `json:"health,omitempty"`
	// Subsystems is the health of each group of parts.
	// +optional
	Subsystems []SubsystemHealth `json:"subsystems,omitempty"`
	// LastPolled is when the BMC's health and event log were last read;
	// the next read is pollInterval after it, across restarts.
	// +optional
	LastPolled *metav1.Time `json:"lastPolled,omitempty"`

	// HardwareStatus is the server's power, its last power request and the
	// cursor of its forwarded events (health changes and event log entries).
	HardwareStatus `json:",inline"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WantedPollInterval is spec.pollInterval with its default.
func (s *BMCInventorySpec) WantedPollInterval() metav1.Duration {
	if s.PollInterval == nil || s.PollInterval.Duration <= 0 {
		return metav1.Duration{Duration: DefaultBMCPollInterval}
	}
	return *s.PollInterval
}
