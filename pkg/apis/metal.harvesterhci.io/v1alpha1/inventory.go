package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=inventories,scope=Namespaced,singular=inventory
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="InventoryStatus",type="string",JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="GeneratedPassword",type="string",JSONPath=`.status.generatedPassword`
// +kubebuilder:printcolumn:name="AllocatedNodeAddress",type="string",JSONPath=`.status.pxeBootConfig.address`
// +kubebuilder:printcolumn:name="Power",type="string",JSONPath=`.status.machinePowerState`

// Inventory maps a Harvester node to its baseboard management controller
// (BMC). It is Harvester Seeder's kind, served field for field, because
// Harvester's UI (a host's Edit Config, Out-of-Band Access) and its node power
// actions read and write exactly this kind: the addon serves the Inventories
// in harvester-system named after a node, which is where Harvester looks.
// Seeder's provisioning fields (primaryDisk, managementInterfaceMacAddress,
// arch, generatedPassword, ownerCluster, pxeBootConfig) are kept so that the
// objects Seeder and the UI write stay valid. An InstancePool of servers you
// own reads primaryDisk, managementInterfaceMacAddress and arch of the
// Inventories it claims; the addon uses none of the others.
type Inventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InventorySpec   `json:"spec,omitempty"`
	Status InventoryStatus `json:"status,omitempty"`
}

// InventorySpec says how to reach the node's BMC, whether to forward its
// events, and which power action was asked for last.
type InventorySpec struct {
	// PrimaryDisk is the disk Harvester is installed on when an InstancePool
	// of servers you own claims this server (empty: the pool's
	// installDevice). Required by Seeder's schema; the UI writes "".
	PrimaryDisk string `json:"primaryDisk"`
	// ManagementInterfaceMacAddress is the MAC of the port the server
	// network-boots from and is managed through: an InstancePool of servers
	// you own claims only a server that has one, and its boot endpoint
	// knows the server by it. Required by Seeder's schema; the UI writes "".
	ManagementInterfaceMacAddress string `json:"managementInterfaceMacAddress"`
	// BaseboardManagementSpec is the BMC's address, port, TLS settings and
	// credentials.
	BaseboardManagementSpec MachineSpec `json:"baseboardSpec"`
	// Events turns the forwarding of the BMC's health changes and event log
	// entries (as Events on the node) on or off, and says how often the BMC
	// is read.
	Events Events `json:"events"`
	// PowerActionRequested is the power action last asked for: shutdown,
	// poweron or reboot. Harvester's node action powerAction writes it (the
	// host's power menu, under maintenance mode) and clears
	// status.powerAction.lastJobName; a new request is accepted once
	// status.powerAction.actionStatus says how the previous one ended.
	// The addon carries out a request once, when status.powerAction.lastJobName
	// is empty or the operation changed with the spec since the last
	// request.
	// +kubebuilder:validation:Enum=shutdown;poweron;reboot
	// +optional
	PowerActionRequested string `json:"powerActionRequested,omitempty"`
	// Arch is the server's architecture: the Harvester release an
	// InstancePool of servers you own installs on it is of this one.
	// +kubebuilder:default=amd64
	// +kubebuilder:validation:Enum=amd64;arm64
	// +optional
	Arch string `json:"arch,omitempty"`
}

// MachineSpec holds the BMC's connection (Seeder takes it from Tinkerbell
// rufio's Machine).
type MachineSpec struct {
	// Connection says where the BMC is and how to log in.
	Connection Connection `json:"connection"`
}

// Connection is where a BMC listens, how its certificate is checked and where
// its credentials are. Which protocol is spoken follows from the port and
// providerOptions: see Protocol.
//
// +kubebuilder:validation:XValidation:rule="!(self.insecureTLS && has(self.caBundle))",message="set either caBundle or insecureTLS, not both"
type Connection struct {
	// Host is the BMC's name or IP address, without scheme, port or path.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/') && !self.contains('@') && !self.contains(' ') && !self.contains('?') && !(self.contains(':') && !self.contains('::') && self.split(':').size() == 2)",message="host is a name or an IP address, without scheme, user, port or path (put the port in port)"
	Host string `json:"host"`
	// Port is the BMC's port. 623 (the default, and the UI's) does not say
	// which protocol: Redfish on 443 is tried first, then IPMI on 623, and
	// status.hardware.bmc says which answered. Any other port means Redfish
	// over HTTPS on it. providerOptions decide first.
	// +kubebuilder:default:=623
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int `json:"port"`
	// AuthSecretRef names the Secret, in any namespace, with the keys
	// username and password. The addon reads this one Secret by name and
	// copies neither value anywhere.
	// +optional
	AuthSecretRef corev1.SecretReference `json:"authSecretRef"`
	// InsecureTLS accepts any certificate from a Redfish BMC. Off (the UI's
	// default), a certificate that chains to the system roots (or caBundle)
	// is trusted; without caBundle, so is the first certificate the BMC
	// presents (trust on first use: pinned in status.hardware.bmc.certificate),
	// and any other one is refused until a person accepts it.
	InsecureTLS bool `json:"insecureTLS"`
	// CABundle is PEM certificates trusted besides the system roots (Redfish):
	// most BMCs ship a self-signed certificate. An addition to Seeder's schema;
	// ignored for IPMI, which has no TLS.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.contains('-----BEGIN CERTIFICATE-----')",message="caBundle must hold PEM certificates"
	// +optional
	CABundle string `json:"caBundle,omitempty"`
	// SystemID is the Id of this server's computer system on a Redfish BMC
	// that lists several (the BMC of a blade chassis or a multi-node
	// server). Without it such a BMC is refused rather than the first
	// system guessed. An addition to Seeder's schema.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="systemID is a computer system's Id, such as 1 or System.Embedded.1, not a path"
	// +optional
	SystemID string `json:"systemID,omitempty"`
	// Timeout bounds one request to the BMC (default 10s): raise it for a
	// BMC that answers slowly under load. An addition to Seeder's schema.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format:=duration
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="self >= duration('1s') && self <= duration('2m')",message="timeout must be between 1s and 2m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// ProviderOptions choose the protocol and port explicitly: redfish or
	// ipmitool. intelAMT and rpc are kept from Seeder's schema and not
	// served by the addon.
	// +optional
	ProviderOptions *ProviderOptions `json:"providerOptions,omitempty"`
}

// ProviderOptions are per-protocol settings (rufio's).
type ProviderOptions struct {
	// IntelAMT: not served by the addon.
	// +optional
	IntelAMT *IntelAMTOptions `json:"intelAMT"`
	// IPMITOOL makes the addon speak IPMI, on its port if set.
	// +optional
	IPMITOOL *IPMITOOLOptions `json:"ipmitool"`
	// Redfish makes the addon speak Redfish over HTTPS on its port.
	// +optional
	Redfish *RedfishOptions `json:"redfish"`
	// RPC: not served by the addon.
	// +optional
	RPC *RPCOptions `json:"rpc"`
}

// RedfishOptions choose Redfish over HTTPS.
type RedfishOptions struct {
	// Port is the BMC's HTTPS port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int `json:"port"`
}

// IPMITOOLOptions choose IPMI.
type IPMITOOLOptions struct {
	// Port is the BMC's IPMI port; unset means connection.port.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int `json:"port"`
	// CipherSuite is kept from Seeder's schema; the addon offers cipher
	// suites 17 and 3 whatever it says.
	// +optional
	CipherSuite string `json:"cipherSuite"`
}

// IntelAMTOptions are kept from Seeder's schema; the addon does not speak
// Intel AMT.
type IntelAMTOptions struct {
	// Port is the AMT port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int `json:"port"`
}

// RPCOptions are kept from Seeder's schema; the addon does not speak rufio's
// RPC provider.
type RPCOptions struct {
	// ConsumerURL is where the RPC consumer listens.
	ConsumerURL string `json:"consumerURL"`
	// +optional
	LogNotificationsDisabled bool `json:"logNotificationsDisabled"`
	// +optional
	Request *RPCRequestOptions `json:"request"`
	// +optional
	Signature *RPCSignatureOptions `json:"signature"`
	// +optional
	HMAC *RPCHMACOptions `json:"hmac"`
	// +optional
	Experimental *RPCExperimentalOptions `json:"experimental"`
}

// RPCRequestOptions shape rufio's RPC requests.
type RPCRequestOptions struct {
	// +optional
	HTTPContentType string `json:"httpContentType"`
	// +optional
	HTTPMethod string `json:"httpMethod"`
	// +optional
	StaticHeaders map[string][]string `json:"staticHeaders"`
	// +optional
	TimestampFormat string `json:"timestampFormat"`
	// +optional
	TimestampHeader string `json:"timestampHeader"`
}

// RPCSignatureOptions shape rufio's RPC request signatures.
type RPCSignatureOptions struct {
	// +optional
	HeaderName string `json:"headerName"`
	// +optional
	AppendAlgoToHeaderDisabled bool `json:"appendAlgoToHeaderDisabled"`
	// +optional
	IncludedPayloadHeaders []string `json:"includedPayloadHeaders"`
}

// RPCHMACOptions are rufio's RPC signing secrets.
type RPCHMACOptions struct {
	// +optional
	PrefixSigDisabled bool `json:"prefixSigDisabled"`
	// +optional
	Secrets map[string][]corev1.SecretReference `json:"secrets"`
}

// RPCExperimentalOptions are rufio's experimental RPC settings.
type RPCExperimentalOptions struct {
	// +optional
	CustomRequestPayload string `json:"customRequestPayload"`
	// +optional
	DotPath string `json:"dotPath"`
}

// Events turns the forwarding of a BMC's events on or off.
type Events struct {
	// Enabled forwards the BMC's health changes and new event log entries as
	// Events on the node. The UI's default is true; the schema's false.
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`
	// PollingInterval is how often the BMC's health and event log are read,
	// as a Go duration (the UI writes e.g. 1h, 30m, 90s). Every value the
	// UI accepts (digits and h, m or s) is taken; one outside 1s to 24h, or
	// too large to be a Go duration, is read as the nearest bound, with a
	// Warning Event PollingIntervalClamped. Seeder's schema also took 1d or
	// "2 hours", which Go cannot parse and the UI never writes: the pattern
	// refuses them.
	// +kubebuilder:default:="1h"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	PollingInterval string `json:"pollingInterval,omitempty"`
}

// InventoryWorkflowStatus is Seeder's summary of an Inventory.
type InventoryWorkflowStatus string

// InventoryStatus reports the BMC, in Seeder's fields (which Harvester's UI
// and node actions read) and in the addon's own (status.hardware).
type InventoryStatus struct {
	// Status is inventoryNodeReady once the BMC was reached and logged in to;
	// anything else (empty, or a word saying what is wrong) makes Harvester's
	// powerActionPossible answer 409 with this value in its message.
	// +optional
	Status InventoryWorkflowStatus `json:"status,omitempty"`
	// GeneratedPassword is Seeder's (provisioning). The addon never writes it.
	// +optional
	GeneratedPassword string `json:"generatedPassword,omitempty"`
	// HardwareID is Seeder's identifier of the machine.
	// +optional
	HardwareID string `json:"hardwareID,omitempty"`
	// Conditions say what is wrong, if anything. Harvester's UI shows the
	// message of a condition whose reason is Error as the host's error banner.
	// The schema is Seeder's (every field a string, lastUpdateTime kept) plus
	// observedGeneration, so that objects Seeder wrote stay valid.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// PXEBootInterface is Seeder's: the node's address (embedded mode) or the
	// address it allocated (provisioning).
	// +optional
	PXEBootInterface PXEBootInterface `json:"pxeBootConfig,omitempty"`
	// Cluster is the Seeder cluster the server belongs to (provisioning).
	// +optional
	Cluster *ObjectReference `json:"ownerCluster,omitempty"`
	// PowerAction is how the last power request went. actionStatus is
	// absent while a request is pending (the UI then shows the host as
	// stopping, starting or rebooting), and complete or failed once it ended.
	// +optional
	PowerAction PowerActionDetails `json:"powerAction,omitempty"`
	// MachinePowerState is the server's power as the BMC last reported it:
	// on, off or unknown. The UI shows a host whose value is off as Off.
	// +optional
	MachinePowerState string `json:"machinePowerState,omitempty"`
	// Hardware is the addon's own record of the BMC (not in Seeder's
	// schema): health, the event cursor, the last power request in detail.
	// +optional
	Hardware *HardwareStatus `json:"hardware,omitempty"`
}

// PXEBootInterface is Seeder's network configuration of a server.
type PXEBootInterface struct {
	// +optional
	Address string `json:"address,omitempty"`
	// +optional
	Netmask string `json:"netmask,omitempty"`
	// +optional
	Gateway string `json:"gateway,omitempty"`
	// +optional
	NameServers []string `json:"nameServers,omitempty"`
}

// ObjectReference names an object in a namespace.
type ObjectReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// PowerActionDetails is Seeder's record of a power request.
type PowerActionDetails struct {
	// LastActionStatus is complete or failed once the request ended; absent
	// while it is pending.
	// +optional
	LastActionStatus string `json:"actionStatus,omitempty"`
	// LastActionRequested is the operation that ended (shutdown, poweron or
	// reboot).
	// +optional
	LastActionRequested string `json:"lastActionRequested,omitempty"`
	// LastJobName names the request being carried out; Harvester clears it
	// to ask for a new one.
	// +optional
	LastJobName string `json:"lastJobName,omitempty"`
}

// HardwareStatus is what the addon's hardware chain keeps about the BMC and
// its server.
type HardwareStatus struct {
	// Health is the server's overall health as the BMC last reported it:
	// OK, Unknown, Warning or Critical.
	// +optional
	Health string `json:"health,omitempty"`
	// Subsystems is the health of each group of parts.
	// +optional
	Subsystems []hardwarev1.SubsystemHealth `json:"subsystems,omitempty"`
	// LastPolled is when the BMC's health and event log were read for the
	// last status written: it rides along with a write that something else
	// made (a change of health, power, a condition), and is never a write of
	// its own, so that a poll that finds nothing new writes nothing. The
	// controller keeps each poll's time in memory; the metric
	// equinix_addon_hardware_last_poll_timestamp_seconds shows it.
	// +optional
	LastPolled *metav1.Time `json:"lastPolled,omitempty"`
	// BMC is what answered at the connection, and the certificate trusted.
	// +optional
	BMC *BMCStatus `json:"bmc,omitempty"`

	// HardwareStatus is the server's power, its last power request and the
	// cursor of its forwarded events.
	hardwarev1.HardwareStatus `json:",inline"`

	// ObservedGeneration is the generation this record describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// BMCStatus is what the addon speaks to the BMC, and the certificate it
// trusts there.
type BMCStatus struct {
	// Protocol is what answered: redfish or ipmi. With port 623 and no
	// providerOptions, Redfish on 443 is tried first, then IPMI on 623; the
	// one that answered is tried first from then on.
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`
	// Address is the host and port that answered.
	// +optional
	Address string `json:"address,omitempty"`
	// Certificate is the Redfish BMC's certificate the addon trusts without
	// a CA (insecureTLS off, no caBundle): the first one it presented, or
	// one a person accepted. Any other one is refused until accepted.
	// +optional
	Certificate *PinnedCertificate `json:"certificate,omitempty"`
}

// PinnedCertificate is a BMC certificate trusted by its fingerprint.
type PinnedCertificate struct {
	// SHA256 is the certificate's fingerprint, as `openssl x509 -noout
	// -fingerprint -sha256` prints it.
	SHA256 string `json:"sha256"`
	// Address is where the BMC presented it: a certificate is pinned for
	// one address, and another address starts afresh.
	Address string `json:"address"`
	// Since is when it was first trusted.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// TrustedBy says why: firstUse (the first certificate seen), accepted
	// (a person's annotation named it) or verified (it chains to the
	// system roots).
	// +optional
	TrustedBy string `json:"trustedBy,omitempty"`
}
