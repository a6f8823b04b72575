package v1

// Network types of an Equinix Metal server, named as the Metal API names them.
const (
	NetworkTypeLayer3           = "layer3"
	NetworkTypeHybrid           = "hybrid"
	NetworkTypeHybridBonded     = "hybrid-bonded"
	NetworkTypeLayer2Bonded     = "layer2-bonded"
	NetworkTypeLayer2Individual = "layer2-individual"
)

// Boot modes.
const (
	// BootModeReinstall is the seed's two-phase flow: boot an iPXE shell to learn the
	// MACs, then reinstall the server with the Harvester installer.
	BootModeReinstall = "reinstall"
	// BootModeSingleBoot boots the installer at once and lets iPXE read the management
	// MAC (${netX/mac}) itself, saving one full boot.
	BootModeSingleBoot = "single-boot"
)

// InstanceTemplate is what every server of a pool is made from. The pool holds it
// in its spec; each Instance keeps the copy it was created from.
//
// +kubebuilder:validation:XValidation:rule="self.networkingConfiguration.type != 'hybrid' || !self.managementInterface.exists(m, m == 'eth1' || m == 'eth3')",message="in hybrid mode eth1 and eth3 leave bond0 to carry VLANs, so they cannot carry the Harvester management network: use eth0 (and eth2)",fieldPath=".managementInterface"
// +kubebuilder:validation:XValidation:rule="self.networkingConfiguration.type != 'layer2-bonded' || (has(self.networkingConfiguration.interfaceConfiguration) && self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == 'bond0'))",message="layer2-bonded removes every layer-3 address: list bond0 with at least one VLAN in interfaceConfiguration, for the Harvester management network",fieldPath=".networkingConfiguration.interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="self.networkingConfiguration.type != 'layer2-individual' || self.managementInterface.all(m, has(self.networkingConfiguration.interfaceConfiguration) && self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == m))",message="layer2-individual removes every layer-3 address: each managementInterface must be listed in interfaceConfiguration with at least one VLAN, for the Harvester management network",fieldPath=".networkingConfiguration.interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="!has(self.networkingConfiguration.managementVLAN) || self.networkingConfiguration.type != 'layer2-bonded' || self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == 'bond0' && self.networkingConfiguration.managementVLAN in i.vlanIDS)",message="managementVLAN must be one of the VLANs listed for bond0",fieldPath=".networkingConfiguration.managementVLAN"
// +kubebuilder:validation:XValidation:rule="!has(self.networkingConfiguration.managementVLAN) || self.networkingConfiguration.type != 'layer2-individual' || self.managementInterface.all(m, self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == m && self.networkingConfiguration.managementVLAN in i.vlanIDS))",message="managementVLAN must be listed for every managementInterface",fieldPath=".networkingConfiguration.managementVLAN"
// +kubebuilder:validation:XValidation:rule="self.bootMode != 'single-boot' || !(self.networkingConfiguration.type in ['layer2-bonded', 'layer2-individual'])",message="single-boot starts the installer before the ports can be moved to the management VLAN, so it cannot work with layer2-bonded or layer2-individual: use bootMode reinstall",fieldPath=".bootMode"
// +kubebuilder:validation:XValidation:rule="self.bootMode != 'single-boot' || size(self.managementInterface) == 1",message="single-boot reads one management MAC in iPXE (the port that answered DHCP), so it takes exactly one managementInterface",fieldPath=".managementInterface"
type InstanceTemplate struct {
	// BillingCycle of the servers.
	// +kubebuilder:validation:Enum=hourly;daily;monthly;yearly
	// +kubebuilder:default=hourly
	// +optional
	BillingCycle string `json:"billingCycle,omitempty"`

	// ManagementInterface lists the physical ports (eth0, eth1, ...) that make up
	// Harvester's management bond (mgmt-bo); their MACs go into the install
	// configuration.
	// +kubebuilder:default={"eth0"}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:Pattern=`^eth[0-9]$`
	// +kubebuilder:validation:items:MaxLength=4
	// +listType=set
	// +optional
	ManagementInterface []string `json:"managementInterface,omitempty"`

	// Plan is the Equinix Metal server plan slug, e.g. c3.small.x86.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Plan string `json:"plan"`

	// Metro is the Equinix Metal metro code, e.g. da or SG (case does not matter).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[a-zA-Z]{2}$`
	Metro string `json:"metro"`

	// ManagementBondingOptions are the Linux bond options of Harvester's management
	// bond, e.g. mode: balance-tlb, miimon: "100". When empty the installer uses
	// active-backup with miimon 100.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="!('mode' in self) || self['mode'] in ['balance-rr', 'active-backup', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb']",message="mode must be one of balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb"
	// +kubebuilder:validation:XValidation:rule="!('miimon' in self) || self['miimon'].matches('^[0-9]+$')",message="miimon must be a number of milliseconds, e.g. \"100\""
	// +optional
	ManagementBondingOptions map[string]string `json:"managementBondingOptions,omitempty"`

	// NetworkingConfiguration sets the server's network type and VLANs.
	// +kubebuilder:default={}
	// +optional
	NetworkingConfiguration NetworkingConfiguration `json:"networkingConfiguration"`

	// HarvesterVersion overrides the release installed on new servers. Default: the
	// cluster's own version (setting server-version), which is what a node must run to
	// join safely.
	// +kubebuilder:validation:Pattern=`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`
	// +optional
	HarvesterVersion string `json:"harvesterVersion,omitempty"`

	// ISOURL overrides the installer ISO. Default: the official release ISO of the
	// Harvester version.
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	ISOURL string `json:"isoURL,omitempty"`

	// IPXEScriptURL overrides the installer iPXE script. Default: the script the addon
	// serves for the Harvester version.
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	IPXEScriptURL string `json:"ipxeScriptURL,omitempty"`

	// SSHKeys are authorized for the rancher user of new servers.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=16384
	// +kubebuilder:validation:items:Pattern=`^(ssh-|ecdsa-|sk-)`
	// +optional
	SSHKeys []string `json:"sshKeys,omitempty"`

	// InstallDevice is the disk Harvester is installed on.
	// +kubebuilder:default=/dev/sda
	// +kubebuilder:validation:Pattern=`^/dev/\S+$`
	// +optional
	InstallDevice string `json:"installDevice,omitempty"`

	// Spot requests spot-market servers. Equinix may reclaim them; a reclaimed
	// server is replaced like any server deleted out of band.
	// +optional
	Spot *SpotSettings `json:"spot,omitempty"`

	// Tags are added to every device of the pool. The equinix.harvesterhci.io/
	// prefix is reserved for the addon's own ownership tags.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.all(t, !t.startsWith('equinix.harvesterhci.io/'))",message="tags starting with equinix.harvesterhci.io/ are reserved for the addon"
	// +listType=set
	// +optional
	Tags []string `json:"tags,omitempty"`

	// CredentialsSecret names the Secret, in the addon's namespace, holding
	// METAL_AUTH_TOKEN and PROJECT_ID. Default: the controller's (equinix-addon).
	// +optional
	CredentialsSecret *SecretReference `json:"credentialsSecret,omitempty"`

	// BootMode picks how a server gets its install configuration: reinstall (boot an
	// iPXE shell, read the MACs, reinstall with the installer) or single-boot (the
	// installer reads the MAC in iPXE; one boot, no reinstall).
	// +kubebuilder:validation:Enum=reinstall;single-boot
	// +kubebuilder:default=reinstall
	// +optional
	BootMode string `json:"bootMode,omitempty"`
}

// NetworkingConfiguration is the seed's networking section.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'layer3' || !has(self.interfaceConfiguration) || size(self.interfaceConfiguration) == 0",message="layer3 keeps every port bonded at layer 3 and carries no VLANs: choose hybrid, hybrid-bonded, layer2-bonded or layer2-individual to attach VLANs",fieldPath=".interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="self.type != 'hybrid' || !has(self.interfaceConfiguration) || self.interfaceConfiguration.all(i, i.name == 'eth1' || i.name == 'eth3')",message="hybrid unbonds the odd-numbered ports for VLANs: only eth1 (and eth3 on 4-port plans) can be listed",fieldPath=".interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="!(self.type in ['hybrid-bonded', 'layer2-bonded']) || !has(self.interfaceConfiguration) || self.interfaceConfiguration.all(i, i.name.startsWith('bond'))",message="in hybrid-bonded and layer2-bonded modes VLANs attach to the bond: only bond0 (and bond1 on 4-port plans) can be listed",fieldPath=".interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="self.type != 'layer2-individual' || !has(self.interfaceConfiguration) || self.interfaceConfiguration.all(i, i.name.startsWith('eth'))",message="layer2-individual unbonds every port: only physical ports (eth0, eth1, ...) can be listed",fieldPath=".interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="!has(self.managementVLAN) || self.type in ['layer2-bonded', 'layer2-individual']",message="managementVLAN applies only to layer2-bonded and layer2-individual; other types keep the management network on layer 3",fieldPath=".managementVLAN"
type NetworkingConfiguration struct {
	// Type is the Equinix Metal network type of the servers.
	// +kubebuilder:validation:Enum=layer3;hybrid;hybrid-bonded;layer2-bonded;layer2-individual
	// +kubebuilder:default=layer3
	// +optional
	Type string `json:"type,omitempty"`

	// InterfaceConfiguration lists the VLANs of each port.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	InterfaceConfiguration []InterfaceConfiguration `json:"interfaceConfiguration,omitempty"`

	// ManagementVLAN is the VLAN that carries Harvester's management network in the
	// layer-2 types, where servers have no layer-3 address. Default: the first VLAN
	// of the management interface (bond0 for layer2-bonded). The VLAN must offer DHCP
	// with a default route and reach the cluster's VIP.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+$') && int(self) >= 2 && int(self) <= 3999",message="must be a VLAN (VXLAN) ID from 2 to 3999"
	// +kubebuilder:validation:MaxLength=4
	// +optional
	ManagementVLAN string `json:"managementVLAN,omitempty"`
}

// InterfaceConfiguration attaches VLANs to one port.
type InterfaceConfiguration struct {
	// Name is the port: eth0..eth9 or bond0..bond9.
	// +kubebuilder:validation:Pattern=`^(eth|bond)[0-9]$`
	// +kubebuilder:validation:MaxLength=5
	Name string `json:"name"`

	// VLANIDs are VXLAN numbers (2-3999) of Metal virtual networks in the pool's
	// metro. Missing ones are created and tagged as the addon's.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=12
	// +kubebuilder:validation:items:MaxLength=4
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[0-9]+$') && int(self) >= 2 && int(self) <= 3999",message="must be a VLAN (VXLAN) ID from 2 to 3999"
	// +listType=set
	VLANIDs []string `json:"vlanIDS"`
}

// SpotSettings request a spot-market server.
type SpotSettings struct {
	// MaxPrice is the highest hourly price, in US dollars, to bid, e.g. "0.50".
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	MaxPrice string `json:"maxPrice"`
}

// SecretReference names a Secret in the addon's namespace (harvester-system by
// default). Other namespaces are not allowed: the addon can read Secrets only
// there, which keeps its RBAC from granting cluster-wide Secret access.
type SecretReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}
