package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=eip,categories=harvester
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="Device",type=string,JSONPath=`.status.deviceID`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.status.service`,priority=1

// ElasticIP keeps one Equinix Metal Elastic IP assigned to the server of the
// node kube-vip holds an address on. kube-vip (ARP mode) writes that node's
// name in the annotation kube-vip.io/vipHost of the Service it serves; on
// Equinix Metal's layer-3 network gratuitous ARP moves nothing, so the addon
// moves the Elastic IP's assignment (unassign, then assign) whenever the
// annotation moves. The addon creates one for the cluster VIP (ConfigMap
// harvester-system/vip) when the VIP is an Elastic IP of the project.
type ElasticIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ElasticIPSpec   `json:"spec"`
	Status ElasticIPStatus `json:"status,omitempty"`
}

// Deletion policies of an ElasticIP.
const (
	// ElasticIPUnassign takes the address off the device when the
	// ElasticIP is deleted, if the addon put it there.
	ElasticIPUnassign = "Unassign"
	// ElasticIPKeep leaves the assignment in place.
	ElasticIPKeep = "Keep"
)

// ElasticIPSpec names the address and whom it follows.
//
// +kubebuilder:validation:XValidation:rule="self.address == oldSelf.address",message="address is fixed; create another ElasticIP for another address"
type ElasticIPSpec struct {
	// Address is the IPv4 address to keep on the VIP holder's server. It must
	// lie in one of the project's public or global IPv4 reservations; the
	// addon assigns it as a /32 and never reserves or releases it.
	// +kubebuilder:validation:Format=ipv4
	// +kubebuilder:validation:MinLength=7
	// +kubebuilder:validation:MaxLength=15
	Address string `json:"address"`
	// Service is the LoadBalancer Service whose kube-vip.io/vipHost
	// annotation names the node to follow. Empty means
	// kube-system/ingress-expose, the Service of the cluster VIP.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`
	// CredentialsSecret names a Secret in the addon's namespace with
	// METAL_AUTH_TOKEN and PROJECT_ID, labelled
	// equinix.harvesterhci.io/secret=credentials, as pools name theirs.
	// Empty means the addon's default Secret (--secret-name).
	// +optional
	CredentialsSecret *SecretReference `json:"credentialsSecret,omitempty"`
	// DeletionPolicy says what deleting this object does to the assignment:
	// Unassign takes the address off its device, but only when the addon
	// assigned it there (an assignment it found in place is left alone);
	// Keep leaves it. The cluster VIP's ElasticIP is created with Keep, so
	// that removing it never takes the cluster's address offline.
	// +kubebuilder:validation:Enum=Unassign;Keep
	// +kubebuilder:default=Unassign
	// +optional
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
}

// ServiceReference names a Service.
type ServiceReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// ElasticIPMove is a move the addon started: it is stored before the first
// Metal call, so that a crash or a lost answer between the unassign and the
// assign is finished by the next pass, towards wherever kube-vip points then.
type ElasticIPMove struct {
	// FromDevice is the device the address was assigned to; empty when it
	// was assigned nowhere.
	// +optional
	FromDevice string `json:"fromDevice,omitempty"`
	// FromAssignment is that assignment's ID.
	// +optional
	FromAssignment string `json:"fromAssignment,omitempty"`
	// ToDevice is the device of ToNode, the node kube-vip names.
	ToDevice string `json:"toDevice"`
	ToNode   string `json:"toNode"`
	// Since is when the addon first saw kube-vip name a node whose device
	// does not hold the address.
	Since metav1.Time `json:"since"`
}

// ElasticIPStatus reports where the address is and why.
type ElasticIPStatus struct {
	// Status is a one-word phase: pending, assigned, moving, waiting (for
	// something the conditions name) or error.
	// +optional
	Status string `json:"status,omitempty"`
	// Service is the Service followed, namespace/name.
	// +optional
	Service string `json:"service,omitempty"`
	// ProjectID is the Equinix Metal project of the credentials used.
	// +optional
	ProjectID string `json:"projectID,omitempty"`
	// ReservationID is the IP reservation the address lies in.
	// +optional
	ReservationID string `json:"reservationID,omitempty"`
	// NodeName is the node kube-vip names in kube-vip.io/vipHost.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// DeviceID is the device the address is assigned to, as last read.
	// +optional
	DeviceID string `json:"deviceID,omitempty"`
	// AssignmentID is the ID of that assignment.
	// +optional
	AssignmentID string `json:"assignmentID,omitempty"`
	// AssignedByAddon is true when the addon made that assignment; the
	// Unassign deletion policy applies to those only.
	// +optional
	AssignedByAddon bool `json:"assignedByAddon,omitempty"`
	// Move is the move in progress.
	// +optional
	Move *ElasticIPMove `json:"move,omitempty"`
	// LastMoveTime is when the addon last finished a move.
	// +optional
	LastMoveTime *metav1.Time `json:"lastMoveTime,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
