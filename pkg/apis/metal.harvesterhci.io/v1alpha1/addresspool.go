package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=addresspools,scope=Namespaced,singular=addresspool
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="AddressPoolStatus",type="string",JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="StartAddress",type="string",JSONPath=`.status.startAddress`
// +kubebuilder:printcolumn:name="LastAddress",type="string",JSONPath=`.status.lastAddress`
// +kubebuilder:printcolumn:name="NetMask",type="string",JSONPath=`.status.netmask`

// AddressPool is a range of IPv4 addresses handed to servers one each:
// Harvester Seeder's kind, served field for field, so that the pools a
// Seeder user declared keep their meaning. An InstancePool of servers you
// own names one (spec.servers.addressPool) when the servers' network has no
// DHCP: each claimed server gets one free address of the pool, recorded in
// status.addressAllocation as Seeder records a node's, until the server is
// released.
type AddressPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddressSpec   `json:"spec,omitempty"`
	Status AddressStatus `json:"status,omitempty"`
}

// AddressSpec is the network the addresses come from.
type AddressSpec struct {
	// CIDR is the network's addresses and prefix length, e.g.
	// 192.168.10.0/24: each address in it but the network's own, its
	// broadcast address, the gateway and the reserved ones can be handed
	// out.
	CIDR string `json:"cidr"`
	// Netmask is the network's mask in dotted form; unset, the CIDR's.
	// +optional
	Netmask string `json:"netmask,omitempty"`
	// Gateway is the network's default route, an address inside CIDR.
	Gateway string `json:"gateway"`
	// ReservedAddresses are never handed out (the cluster's VIP, a name
	// server, anything else on the network).
	// +optional
	ReservedAddresses []string `json:"reservedAddresses,omitempty"`
}

// AddressStatus is the pool's range and who holds which address. Seeder's
// schema requires every field once a status is written.
type AddressStatus struct {
	// Status is poolReady while an address is left, poolExhausted when
	// none is.
	Status PoolStatus `json:"status"`
	// StartAddress and LastAddress are the first and last address of CIDR.
	StartAddress string `json:"startAddress"`
	LastAddress  string `json:"lastAddress"`
	// AvailableAddresses is how many addresses the pool can hand out in
	// all, whoever holds them now.
	AvailableAddresses int `json:"availableAddresses"`
	// AddressAllocation maps each address handed out (or reserved) to
	// what holds it.
	AddressAllocation map[string]ObjectReferenceWithKind `json:"addressAllocation"`
	// Netmask is the network's mask in dotted form.
	Netmask string `json:"netmask"`
}

// PoolStatus says whether a pool has an address left.
type PoolStatus string

// ObjectReferenceWithKind is what holds an address: Seeder's kinds are
// inventory (a server's address), cluster (a cluster's VIP) and reserved
// (spec.reservedAddresses).
type ObjectReferenceWithKind struct {
	ObjectReference `json:",inline"`
	Kind            string `json:"kind"`
}
