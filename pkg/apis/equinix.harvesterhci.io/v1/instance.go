package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=inst,categories=harvester
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.status.server`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address`
// +kubebuilder:printcolumn:name="Waiting",type=string,JSONPath=`.status.waitingFor`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="MAC",type=string,JSONPath=`.status.managementMAC`,priority=1
// +kubebuilder:printcolumn:name="PublicIP",type=string,JSONPath=`.status.publicIP`,priority=1
// +kubebuilder:printcolumn:name="PrivateIP",type=string,JSONPath=`.status.privateIP`,priority=1
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`,priority=1
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.poolName`,priority=1
// +kubebuilder:printcolumn:name="Power",type=string,JSONPath=`.status.powerState`,priority=1
// +kubebuilder:printcolumn:name="Boot",type=string,JSONPath=`.status.bootPath`,priority=1

// Instance is one server of a pool, from device creation (Equinix Metal) or
// its claim (a server you own) to a Ready Harvester node. Its pool creates
// and owns it.
type Instance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InstanceSpec   `json:"spec"`
	Status InstanceStatus `json:"status,omitempty"`
}

// InstanceSpec is the pool's template as it was when this server was made. Fields
// that shape the server itself cannot change: change them on the pool, which rolls
// new servers out one at a time.
//
// +kubebuilder:validation:XValidation:rule="has(self.servers) == has(oldSelf.servers) && (!has(self.servers) || self.servers == oldSelf.servers)",message="servers is fixed for the life of a server; change the pool instead"
// +kubebuilder:validation:XValidation:rule="self.poolName == oldSelf.poolName && has(self.plan) == has(oldSelf.plan) && (!has(self.plan) || self.plan == oldSelf.plan) && has(self.metro) == has(oldSelf.metro) && (!has(self.metro) || self.metro == oldSelf.metro) && self.bootMode == oldSelf.bootMode && self.networkingConfiguration.type == oldSelf.networkingConfiguration.type && self.managementInterface == oldSelf.managementInterface",message="poolName, plan, metro, bootMode, managementInterface and networkingConfiguration.type are fixed for the life of a server; change the pool instead"
// +kubebuilder:validation:XValidation:rule="has(self.hardwareReservationID) == has(oldSelf.hardwareReservationID) && (!has(self.hardwareReservationID) || self.hardwareReservationID == oldSelf.hardwareReservationID)",message="hardwareReservationID is fixed for the life of a server"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.rebootRequestedAt) || (has(self.rebootRequestedAt) && timestamp(self.rebootRequestedAt) >= timestamp(oldSelf.rebootRequestedAt))",message="rebootRequestedAt only moves forward: set a later time to ask for another reboot"
// +kubebuilder:validation:XValidation:rule="!has(self.powerState) || self.powerState != 'off' || !has(self.rebootRequestedAt) || (has(oldSelf.rebootRequestedAt) && self.rebootRequestedAt == oldSelf.rebootRequestedAt)",message="a server switched off cannot be rebooted: set powerState to on instead"
type InstanceSpec struct {
	// PoolName is the InstancePool this server belongs to.
	// +kubebuilder:validation:MinLength=1
	PoolName string `json:"poolName"`

	// HardwareReservationID is the reservation this server was placed on, if any.
	// +optional
	HardwareReservationID string `json:"hardwareReservationID,omitempty"`

	InstanceTemplate `json:",inline"`

	// PowerSpec asks for the server's power: powerState and
	// rebootRequestedAt.
	PowerSpec `json:",inline"`
}

// RetryStatus paces a Metal call that failed: it is stored with the failure,
// so the pace survives restarts and is not undone by the status write itself
// re-running the Instance.
type RetryStatus struct {
	// Failures counts the failures in a row.
	Failures int32 `json:"failures"`
	// NotBefore is when the call may be sent again.
	NotBefore metav1.Time `json:"notBefore"`
	// Reason is the condition reason of the last failure.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// InstanceStatus reports the server and its node.
type InstanceStatus struct {
	// Status is a one-word phase: pending, provisioning, networking, installing,
	// joining, managed, unhealthy, off (switched off on request), failed or
	// deleting.
	// +optional
	Status string `json:"status,omitempty"`
	// Server names the machine: the Equinix Metal device ID, or for a server
	// you own the Inventory (in harvester-system) the Instance claimed.
	// +optional
	Server string `json:"server,omitempty"`
	// InstanceID is the Equinix Metal device ID.
	// +optional
	InstanceID string `json:"instanceID,omitempty"`
	// ProjectID is the Equinix Metal project the device was made in, recorded
	// before the first create is sent. The addon acts on this server only with
	// credentials of this project: a Secret that now names another project is
	// refused (CredentialsReady=False, ProjectMismatch) rather than read as
	// "the device is gone".
	// +optional
	ProjectID string `json:"projectID,omitempty"`
	// Metro is the metro (lowercase) the device was made in, recorded with
	// ProjectID.
	// +optional
	Metro string `json:"metro,omitempty"`
	// Facility is the data centre (lowercase facility code, e.g. da11) the
	// device was placed in, as Equinix Metal reported it; the Node's
	// topology.kubernetes.io/zone.
	// +optional
	Facility string `json:"facility,omitempty"`
	// CreateRetry is set while device creates are refused (no capacity, an
	// invalid request, throttling, credentials): no create, and no list
	// before it, is sent before notBefore.
	// +optional
	CreateRetry *RetryStatus `json:"createRetry,omitempty"`
	// UserdataClearRetry is set while clearing the join configuration from
	// the device's userdata keeps failing.
	// +optional
	UserdataClearRetry *RetryStatus `json:"userdataClearRetry,omitempty"`
	// DeviceState is the device state last read from Equinix Metal.
	// +optional
	DeviceState string `json:"deviceState,omitempty"`
	// PublicIP is the device's public IPv4 address (none in layer-2 modes).
	// +optional
	PublicIP string `json:"publicIP,omitempty"`
	// PrivateIP is the device's private IPv4 address (none in layer-2 modes).
	// +optional
	PrivateIP string `json:"privateIP,omitempty"`
	// MACAddresses maps each physical port (eth0, eth1, ...) to its MAC.
	// +optional
	MACAddresses map[string]string `json:"macAddresses,omitempty"`
	// NodeName is the Harvester node this server joined as.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// NetworkType is the network type last read from the device's ports.
	// +optional
	NetworkType string `json:"networkType,omitempty"`
	// NetworkConfigHash identifies the network configuration (template and
	// phase) the ports last converged to; while it matches, the networking
	// chain makes no API call.
	// +optional
	NetworkConfigHash string `json:"networkConfigHash,omitempty"`
	// PasswordSecret names the Secret (in the controller's namespace) holding the
	// generated console password of the rancher user.
	// +optional
	PasswordSecret string `json:"passwordSecret,omitempty"`
	// UserdataCleared is set once the join configuration (it holds the join
	// token) was removed from the device's userdata after the join.
	// +optional
	UserdataCleared bool `json:"userdataCleared,omitempty"`
	// HarvesterVersion is the release installed on this server.
	// +optional
	HarvesterVersion string `json:"harvesterVersion,omitempty"`

	// DeviceCreatedAt is when the device was created (or adopted).
	// +optional
	DeviceCreatedAt *metav1.Time `json:"deviceCreatedAt,omitempty"`
	// DeviceActiveAt is when the device first became active.
	// +optional
	DeviceActiveAt *metav1.Time `json:"deviceActiveAt,omitempty"`
	// NetworkBootRequestedAt is when the one-time boot into the installer
	// (from the network, the virtual CD or the UEFI HTTP URL: bootPath)
	// was asked of the BMC of a server people own; stored before the
	// command, which is never sent twice.
	// +optional
	NetworkBootRequestedAt *metav1.Time `json:"networkBootRequestedAt,omitempty"`
	// BootPath is how the server people own is booted into the installer:
	// VirtualMedia, UefiHttp or PXE (see the pool's spec.servers.bootPath).
	// Chosen once per claim from what its BMC offers, the boot endpoint
	// (its boot loaders and public URL) and the pool's pin; the
	// BootPathChosen Event and the Installing condition say why.
	// +optional
	BootPath string `json:"bootPath,omitempty"`
	// BootMediaInsertedAt is when the claim's boot image was asked to be
	// inserted in the virtual CD of the server's BMC; stored before the
	// command, which is never sent twice. The boot endpoint serves the
	// image from then until the node joins.
	// +optional
	BootMediaInsertedAt *metav1.Time `json:"bootMediaInsertedAt,omitempty"`
	// BootMediaEndpoint is the boot endpoint's base URL the inserted
	// image's URL began with, so that the eject names the same URL after
	// the endpoint's address changed. The rest of the URL carries the
	// claim's nonce and is never stored.
	// +optional
	BootMediaEndpoint string `json:"bootMediaEndpoint,omitempty"`
	// BootMediaEjectedAt is when the image the addon inserted was found
	// out of the virtual CD, ejected at the join or at the release.
	// +optional
	BootMediaEjectedAt *metav1.Time `json:"bootMediaEjectedAt,omitempty"`
	// SystemUUID is the SMBIOS UUID of a server people own, as its BMC
	// reported it before the network boot; the boot endpoint serves only a
	// request that names it (empty: the BMC gave none, the MAC alone is
	// checked).
	// +optional
	SystemUUID string `json:"systemUUID,omitempty"`
	// BootFirmware is the firmware the BMC of a server people own was told
	// to network-boot it with, UEFI or Legacy; empty when its BMC takes
	// no boot mode (the server boots as its firmware is set). The
	// NetworkBoot Event says why this one was chosen.
	// +optional
	BootFirmware string `json:"bootFirmware,omitempty"`
	// PowerCycles counts the power cycles of an unhealthy server people own
	// (at most two, within the pool's nodeCleanupWaitInterval, before it is
	// replaced); back to zero once its node is Ready again.
	// +optional
	PowerCycles int32 `json:"powerCycles,omitempty"`
	// PowerRequestedAt is when the server people own was powered on (or
	// cycled, when it was on) to boot from the network, and, while it is
	// deleted, when it was powered off; stored before the command.
	// +optional
	PowerRequestedAt *metav1.Time `json:"powerRequestedAt,omitempty"`
	// InstallRequestedAt is when the installer was started (reinstall or first boot).
	// +optional
	InstallRequestedAt *metav1.Time `json:"installRequestedAt,omitempty"`
	// BootScriptServedAt is when the boot endpoint first served the
	// installer script to the server people own: its firmware booted from
	// the network and iPXE asked for it.
	// +optional
	BootScriptServedAt *metav1.Time `json:"bootScriptServedAt,omitempty"`
	// InstallConfigServedAt is when the boot endpoint first served the
	// install configuration to the server people own: the Harvester
	// installer is running.
	// +optional
	InstallConfigServedAt *metav1.Time `json:"installConfigServedAt,omitempty"`
	// NodeRegisteredAt is when the server's Node was first seen, Ready or
	// not.
	// +optional
	NodeRegisteredAt *metav1.Time `json:"nodeRegisteredAt,omitempty"`
	// Address is the node's internal address once it registered.
	// +optional
	Address string `json:"address,omitempty"`
	// ManagementMAC is the MAC of the server's management NIC (a server
	// people own: its Inventory's managementInterfaceMacAddress), the one
	// that boots from the network.
	// +optional
	ManagementMAC string `json:"managementMAC,omitempty"`
	// ManagementAddress is the static management address of a server
	// people own whose pool names an addressPool, with the network's
	// prefix length (10.0.2.15/24): handed out by that AddressPool once
	// the server is claimed, given to its boot image and its installed
	// node, and given back when the server is released.
	// +optional
	ManagementAddress string `json:"managementAddress,omitempty"`
	// ManagementGateway is the default route that goes with
	// managementAddress: the AddressPool's gateway.
	// +optional
	ManagementGateway string `json:"managementGateway,omitempty"`
	// ManagementAddressPool is the AddressPool that holds
	// managementAddress, in harvester-system: the one it is given back to.
	// +optional
	ManagementAddressPool string `json:"managementAddressPool,omitempty"`
	// WaitingFor says, in a few words, what a server that is not Ready yet
	// waits for (a free server, its firmware's network boot, the
	// installer, its node); empty once Ready.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// JoinedAt is when the node first became Ready.
	// +optional
	JoinedAt *metav1.Time `json:"joinedAt,omitempty"`
	// MaintenanceRequestedAt is when Harvester maintenance mode (or a cordon
	// and drain) was requested before the server's removal.
	// +optional
	MaintenanceRequestedAt *metav1.Time `json:"maintenanceRequestedAt,omitempty"`
	// UnhealthySince is when the node's Ready condition last left True, while it is
	// not True.
	// +optional
	UnhealthySince *metav1.Time `json:"unhealthySince,omitempty"`

	// HardwareStatus is the server's power, its last power request, the
	// cursor of its forwarded events and its termination time.
	hardwarev1.HardwareStatus `json:",inline"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeName is the name the Instance's server joins the cluster under, its
// host name: the Instance's own name for an Equinix Metal device; for a
// server people own, the name of the Inventory it claimed, since Harvester
// pairs a node with its Inventory by name (hardware, power actions and
// fencing then reach the node). Once the server joined, the node it joined
// as counts, so a server installed under another name stays followed. Empty
// while an owned Instance holds no server.
func (i *Instance) NodeName() string {
	if i.Status.NodeName != "" {
		return i.Status.NodeName
	}
	if i.Spec.Owned() {
		return i.Status.Server
	}
	return i.Name
}
