// Package v1beta1 names the part of harvester-load-balancer's API
// (loadbalancer.harvesterhci.io/v1beta1) the addon writes and reads: its
// IPPool, spelled as that project's CRD spells it.
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fields below are the part of harvester-load-balancer's IPPool
// (loadbalancer.harvesterhci.io/v1beta1) the addon writes and reads, spelled
// as that project's CRD spells them. The addon does not import the
// harvester-load-balancer module for them: it would bring its whole
// dependency graph for four structs.

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// IPPool is a range of addresses harvester-load-balancer hands to
// LoadBalancer Services, which kube-vip then announces.
type IPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IPPoolSpec   `json:"spec"`
	Status IPPoolStatus `json:"status,omitempty"`
}

// IPPoolSpec is what the pool offers and to whom.
type IPPoolSpec struct {
	Description string `json:"description,omitempty"`
	// Ranges are host-local IPAM ranges.
	Ranges []Range `json:"ranges"`
	// Selector chooses the load balancers the pool serves.
	Selector Selector `json:"selector,omitempty"`
}

// Range is a range of addresses within a subnet.
type Range struct {
	RangeStart string `json:"rangeStart,omitempty"`
	RangeEnd   string `json:"rangeEnd,omitempty"`
	Subnet     string `json:"subnet"`
	Gateway    string `json:"gateway,omitempty"`
}

// Selector chooses load balancers by network and by where they are.
type Selector struct {
	Priority uint32  `json:"priority,omitempty"`
	Network  string  `json:"network,omitempty"`
	Scope    []Tuple `json:"scope,omitempty"`
}

// Tuple is one place a pool serves: a project, a namespace, a guest cluster.
type Tuple struct {
	Project      string `json:"project,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	GuestCluster string `json:"guestCluster,omitempty"`
}

// IPPoolStatus is harvester-load-balancer's account of the pool.
type IPPoolStatus struct {
	Total         int64             `json:"total"`
	Available     int64             `json:"available"`
	LastAllocated string            `json:"lastAllocated"`
	Allocated     map[string]string `json:"allocated,omitempty"`
}
