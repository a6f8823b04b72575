package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=eippool,categories=harvester
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Metro",type=string,JSONPath=`.spec.metro`
// +kubebuilder:printcolumn:name="Block",type=string,JSONPath=`.status.cidr`
// +kubebuilder:printcolumn:name="Services",type=integer,JSONPath=`.status.services`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ElasticIPPool gives LoadBalancer Services addresses that Equinix Metal's
// layer-3 network routes. The addon reserves a block of public Elastic IPs
// in the metro, tagged as its own, and offers it to harvester-load-balancer
// as an IPPool of the same name; every LoadBalancer Service that gets an
// address of the block gets an ElasticIP, which keeps that address assigned
// to the server of the node kube-vip names in the Service's
// kube-vip.io/vipHost, and goes, unassigning it, when the Service does.
// Deleting the pool deletes its ElasticIPs and its IPPool and releases the
// block.
type ElasticIPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ElasticIPPoolSpec   `json:"spec"`
	Status ElasticIPPoolStatus `json:"status,omitempty"`
}

// ElasticIPPoolSpec says what block to reserve and whom its IPPool serves.
//
// +kubebuilder:validation:XValidation:rule="self.metro == oldSelf.metro && self.quantity == oldSelf.quantity",message="metro and quantity are fixed: the block is reserved once; make another pool for another block"
type ElasticIPPoolSpec struct {
	// Metro is where the block is reserved, the metro of the servers whose
	// nodes kube-vip may name: Equinix Metal assigns an address only to a
	// device of its reservation's metro.
	// +kubebuilder:validation:Pattern=`^[a-z]{2}$`
	Metro string `json:"metro"`
	// Quantity is the number of addresses, one public IPv4 block. Blocks of
	// more than four may wait for Equinix Metal's approval.
	// +kubebuilder:validation:Enum=1;2;4;8;16
	Quantity int32 `json:"quantity"`
	// CredentialsSecret names a labelled credentials Secret in the addon's
	// namespace, as pools name theirs; empty means the default Secret.
	// +optional
	CredentialsSecret *SecretReference `json:"credentialsSecret,omitempty"`
	// Selector is the IPPool's selector: which load balancers
	// harvester-load-balancer gives addresses of this pool (by network,
	// project, namespace or guest cluster, and priority).
	// +optional
	Selector *ElasticIPPoolSelector `json:"selector,omitempty"`
}

// ElasticIPPoolSelector is written to the IPPool's spec.selector.
type ElasticIPPoolSelector struct {
	// Priority orders the pools that match a load balancer.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Priority int32 `json:"priority,omitempty"`
	// Network is a VM network (namespace/name) the pool serves.
	// +optional
	Network string `json:"network,omitempty"`
	// Scope lists where the pool serves; an empty field matches anything.
	// +optional
	Scope []ElasticIPPoolScope `json:"scope,omitempty"`
}

// ElasticIPPoolScope is one place an IPPool serves.
type ElasticIPPoolScope struct {
	// +optional
	Project string `json:"project,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	GuestCluster string `json:"guestCluster,omitempty"`
}

// ElasticIPPoolStatus reports the block and its IPPool.
type ElasticIPPoolStatus struct {
	// Status is a one-word phase: pending, ready, waiting (for something
	// the conditions name), deleting or error.
	// +optional
	Status string `json:"status,omitempty"`
	// ProjectID is the Equinix Metal project of the credentials used.
	// +optional
	ProjectID string `json:"projectID,omitempty"`
	// ReservationID is the block's reservation, once requested.
	// +optional
	ReservationID string `json:"reservationID,omitempty"`
	// CIDR is the block, once Equinix Metal granted it.
	// +optional
	CIDR string `json:"cidr,omitempty"`
	// IPPool is the harvester-load-balancer IPPool offering the block.
	// +optional
	IPPool string `json:"ipPool,omitempty"`
	// Services counts the ElasticIPs of the pool: LoadBalancer Services
	// with an address of the block.
	// +optional
	Services int32 `json:"services,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
