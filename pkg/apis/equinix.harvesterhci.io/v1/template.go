package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Network types of an Equinix Metal server, named as the Metal API names them.
const (
	NetworkTypeLayer3           = "layer3"
	NetworkTypeHybrid           = "hybrid"
	NetworkTypeHybridBonded     = "hybrid-bonded"
	NetworkTypeLayer2Bonded     = "layer2-bonded"
	NetworkTypeLayer2Individual = "layer2-individual"
)

// Boot firmware of a server people own (spec.servers.bootFirmware, the
// Inventory annotation AnnotationBootFirmware, status.bootFirmware), in
// Redfish's words (BootSourceOverrideMode).
const (
	BootFirmwareUEFI   = "UEFI"
	BootFirmwareLegacy = "Legacy"
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
// A server comes from one of two providers: servers you own (Servers) or
// Equinix Metal (the fields of EquinixMetal, which are refused with
// Servers); the other fields are every server's. The rules below keep the
// providers apart (a Metal pool needs a plan and a metro; a pool of servers
// you own sets no Metal field but at its default) and tie the boot mode to
// the ports; the Metal network's own rules are EquinixMetal's.
//
// +kubebuilder:validation:XValidation:rule="self.bootMode != 'single-boot' || !(self.networkingConfiguration.type in ['layer2-bonded', 'layer2-individual'])",message="single-boot starts the installer before the ports can be moved to the management VLAN, so it cannot work with layer2-bonded or layer2-individual: use bootMode reinstall",fieldPath=".bootMode"
// +kubebuilder:validation:XValidation:rule="self.bootMode != 'single-boot' || size(self.managementInterface) == 1",message="single-boot reads one management MAC in iPXE (the port that answered DHCP), so it takes exactly one managementInterface",fieldPath=".managementInterface"
// +kubebuilder:validation:XValidation:rule="has(self.servers) || has(self.plan)",message="an Equinix Metal pool needs a plan; to use servers you own, set servers instead",fieldPath=".plan"
// +kubebuilder:validation:XValidation:rule="has(self.servers) || has(self.metro)",message="an Equinix Metal pool needs a metro; to use servers you own, set servers instead",fieldPath=".metro"
// +kubebuilder:validation:XValidation:rule="!has(self.servers) || (!has(self.plan) && !has(self.metro) && !has(self.spot) && !has(self.tags) && !has(self.credentialsSecret) && !has(self.ipxeScriptURL) && (!has(self.billingCycle) || self.billingCycle == 'hourly') && (!has(self.managementInterface) || self.managementInterface == ['eth0']) && self.networkingConfiguration.type == 'layer3' && !has(self.networkingConfiguration.interfaceConfiguration) && !has(self.networkingConfiguration.managementVLAN))",messageExpression="'servers chooses servers you own, so the Equinix Metal fields ' + ((has(self.plan) ? ', plan' : \"\") + (has(self.metro) ? ', metro' : \"\") + (has(self.spot) ? ', spot' : \"\") + (has(self.tags) ? ', tags' : \"\") + (has(self.credentialsSecret) ? ', credentialsSecret' : \"\") + (has(self.ipxeScriptURL) ? ', ipxeScriptURL' : \"\") + (has(self.billingCycle) && self.billingCycle != 'hourly' ? ', billingCycle' : \"\") + (has(self.managementInterface) && self.managementInterface != ['eth0'] ? ', managementInterface' : \"\") + (self.networkingConfiguration.type != 'layer3' || has(self.networkingConfiguration.interfaceConfiguration) || has(self.networkingConfiguration.managementVLAN) ? ', networkingConfiguration' : \"\")).substring(2) + ' cannot be set with it: remove them, or remove servers for an Equinix Metal pool'"
type InstanceTemplate struct {
	// Servers is the one field of the provider of servers you own, and
	// makes the pool one of them: each server is an Inventory
	// (metal.harvesterhci.io/v1alpha1, in harvester-system) that the
	// selector chooses, booted from the network and powered through its BMC.
	// Without it the pool is an Equinix Metal pool (plan and metro).
	// +optional
	Servers *OwnedServers `json:"servers,omitempty"`

	// EquinixMetal are the fields of the Equinix Metal provider, inline:
	// on the wire they are the template's own.
	EquinixMetal `json:",inline"`

	// ManagementBondingOptions are the Linux bond options of Harvester's management
	// bond, e.g. mode: balance-tlb, miimon: "100". When empty the installer uses
	// active-backup with miimon 100.
	//
	// The installer copies every key and value into the node's network
	// configuration without checking them, so a typo (mimon) or a value the
	// bonding driver refuses leaves the installed node without its management
	// network. The keys are therefore limited to the bond-level options of the
	// Linux bonding driver (the per-port ones, and slaves, which the installer
	// fills from managementInterface, are left out), and the values of the
	// options people set are checked against what the driver accepts. The
	// enumerated options take the driver's value names, as mode always has.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['ad_actor_sys_prio', 'ad_actor_system', 'ad_select', 'ad_user_port_key', 'active_slave', 'all_slaves_active', 'arp_all_targets', 'arp_interval', 'arp_ip_target', 'arp_missed_max', 'arp_validate', 'broadcast_neighbor', 'coupled_control', 'downdelay', 'fail_over_mac', 'lacp_active', 'lacp_rate', 'lp_interval', 'miimon', 'min_links', 'mode', 'ns_ip6_target', 'num_grat_arp', 'num_unsol_na', 'packets_per_slave', 'peer_notif_delay', 'primary', 'primary_reselect', 'resend_igmp', 'tlb_dynamic_lb', 'updelay', 'use_carrier', 'xmit_hash_policy'])",message="unknown bond option: the Linux bonding driver has no option of that name",messageExpression="'unknown bond option \"' + self.filter(k, !(k in ['ad_actor_sys_prio', 'ad_actor_system', 'ad_select', 'ad_user_port_key', 'active_slave', 'all_slaves_active', 'arp_all_targets', 'arp_interval', 'arp_ip_target', 'arp_missed_max', 'arp_validate', 'broadcast_neighbor', 'coupled_control', 'downdelay', 'fail_over_mac', 'lacp_active', 'lacp_rate', 'lp_interval', 'miimon', 'min_links', 'mode', 'ns_ip6_target', 'num_grat_arp', 'num_unsol_na', 'packets_per_slave', 'peer_notif_delay', 'primary', 'primary_reselect', 'resend_igmp', 'tlb_dynamic_lb', 'updelay', 'use_carrier', 'xmit_hash_policy']))[0] + '\": the Linux bonding driver has no option of that name (check the spelling, e.g. miimon, xmit_hash_policy)'"
	// +kubebuilder:validation:XValidation:rule="!('mode' in self) || self['mode'] in ['balance-rr', 'active-backup', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb']",message="mode must be one of balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb",messageExpression="'mode must be one of balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb, not \"' + self['mode'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="['ad_actor_sys_prio', 'ad_user_port_key', 'arp_interval', 'arp_missed_max', 'downdelay', 'lp_interval', 'miimon', 'min_links', 'num_grat_arp', 'num_unsol_na', 'packets_per_slave', 'peer_notif_delay', 'resend_igmp', 'updelay'].all(k, !(k in self) || self[k].matches('^[0-9]{1,9}$'))",message="miimon, updelay, downdelay, arp_interval and the other counters and intervals must be whole numbers, e.g. \"100\"",messageExpression="['ad_actor_sys_prio', 'ad_user_port_key', 'arp_interval', 'arp_missed_max', 'downdelay', 'lp_interval', 'miimon', 'min_links', 'num_grat_arp', 'num_unsol_na', 'packets_per_slave', 'peer_notif_delay', 'resend_igmp', 'updelay'].filter(k, k in self && !self[k].matches('^[0-9]{1,9}$')).map(k, k + ' must be a whole number, e.g. \"100\", not \"' + self[k] + '\"')[0]"
	// +kubebuilder:validation:XValidation:rule="!('resend_igmp' in self) || !self['resend_igmp'].matches('^[0-9]{1,9}$') || (int(self['resend_igmp']) >= 0 && int(self['resend_igmp']) <= 255)",message="resend_igmp must be from 0 to 255",messageExpression="'resend_igmp must be from 0 to 255, not ' + self['resend_igmp']"
	// +kubebuilder:validation:XValidation:rule="!('num_grat_arp' in self) || !self['num_grat_arp'].matches('^[0-9]{1,9}$') || (int(self['num_grat_arp']) >= 0 && int(self['num_grat_arp']) <= 255)",message="num_grat_arp must be from 0 to 255",messageExpression="'num_grat_arp must be from 0 to 255, not ' + self['num_grat_arp']"
	// +kubebuilder:validation:XValidation:rule="!('num_unsol_na' in self) || !self['num_unsol_na'].matches('^[0-9]{1,9}$') || (int(self['num_unsol_na']) >= 0 && int(self['num_unsol_na']) <= 255)",message="num_unsol_na must be from 0 to 255",messageExpression="'num_unsol_na must be from 0 to 255, not ' + self['num_unsol_na']"
	// +kubebuilder:validation:XValidation:rule="!('arp_missed_max' in self) || !self['arp_missed_max'].matches('^[0-9]{1,9}$') || (int(self['arp_missed_max']) >= 1 && int(self['arp_missed_max']) <= 255)",message="arp_missed_max must be from 1 to 255",messageExpression="'arp_missed_max must be from 1 to 255, not ' + self['arp_missed_max']"
	// +kubebuilder:validation:XValidation:rule="!('packets_per_slave' in self) || !self['packets_per_slave'].matches('^[0-9]{1,9}$') || (int(self['packets_per_slave']) >= 0 && int(self['packets_per_slave']) <= 65535)",message="packets_per_slave must be from 0 to 65535",messageExpression="'packets_per_slave must be from 0 to 65535, not ' + self['packets_per_slave']"
	// +kubebuilder:validation:XValidation:rule="!('ad_actor_sys_prio' in self) || !self['ad_actor_sys_prio'].matches('^[0-9]{1,9}$') || (int(self['ad_actor_sys_prio']) >= 1 && int(self['ad_actor_sys_prio']) <= 65535)",message="ad_actor_sys_prio must be from 1 to 65535",messageExpression="'ad_actor_sys_prio must be from 1 to 65535, not ' + self['ad_actor_sys_prio']"
	// +kubebuilder:validation:XValidation:rule="!('ad_user_port_key' in self) || !self['ad_user_port_key'].matches('^[0-9]{1,9}$') || (int(self['ad_user_port_key']) >= 0 && int(self['ad_user_port_key']) <= 1023)",message="ad_user_port_key must be from 0 to 1023",messageExpression="'ad_user_port_key must be from 0 to 1023, not ' + self['ad_user_port_key']"
	// +kubebuilder:validation:XValidation:rule="!('lp_interval' in self) || !self['lp_interval'].matches('^[0-9]{1,9}$') || (int(self['lp_interval']) >= 1 && int(self['lp_interval']) <= 999999999)",message="lp_interval must be from 1 to 999999999 seconds",messageExpression="'lp_interval must be from 1 to 999999999 seconds, not ' + self['lp_interval']"
	// +kubebuilder:validation:XValidation:rule="!('xmit_hash_policy' in self) || self['xmit_hash_policy'] in ['layer2', 'layer2+3', 'layer3+4', 'encap2+3', 'encap3+4', 'vlan+srcmac']",message="xmit_hash_policy must be layer2, layer2+3, layer3+4, encap2+3, encap3+4 or vlan+srcmac",messageExpression="'xmit_hash_policy must be layer2, layer2+3, layer3+4, encap2+3, encap3+4 or vlan+srcmac, not \"' + self['xmit_hash_policy'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('lacp_rate' in self) || self['lacp_rate'] in ['slow', 'fast']",message="lacp_rate must be slow or fast",messageExpression="'lacp_rate must be slow or fast, not \"' + self['lacp_rate'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('lacp_active' in self) || self['lacp_active'] in ['on', 'off']",message="lacp_active must be on or off",messageExpression="'lacp_active must be on or off, not \"' + self['lacp_active'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('ad_select' in self) || self['ad_select'] in ['stable', 'bandwidth', 'count']",message="ad_select must be stable, bandwidth or count",messageExpression="'ad_select must be stable, bandwidth or count, not \"' + self['ad_select'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('arp_validate' in self) || self['arp_validate'] in ['none', 'active', 'backup', 'all', 'filter', 'filter_active', 'filter_backup']",message="arp_validate must be none, active, backup, all, filter, filter_active or filter_backup",messageExpression="'arp_validate must be none, active, backup, all, filter, filter_active or filter_backup, not \"' + self['arp_validate'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('arp_all_targets' in self) || self['arp_all_targets'] in ['any', 'all']",message="arp_all_targets must be any or all",messageExpression="'arp_all_targets must be any or all, not \"' + self['arp_all_targets'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('fail_over_mac' in self) || self['fail_over_mac'] in ['none', 'active', 'follow']",message="fail_over_mac must be none, active or follow",messageExpression="'fail_over_mac must be none, active or follow, not \"' + self['fail_over_mac'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('primary_reselect' in self) || self['primary_reselect'] in ['always', 'better', 'failure']",message="primary_reselect must be always, better or failure",messageExpression="'primary_reselect must be always, better or failure, not \"' + self['primary_reselect'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="['all_slaves_active', 'broadcast_neighbor', 'coupled_control', 'tlb_dynamic_lb', 'use_carrier'].all(k, !(k in self) || self[k] in ['0', '1', 'off', 'on'])",message="all_slaves_active, broadcast_neighbor, coupled_control, tlb_dynamic_lb and use_carrier take 0, 1, off or on",messageExpression="['all_slaves_active', 'broadcast_neighbor', 'coupled_control', 'tlb_dynamic_lb', 'use_carrier'].filter(k, k in self && !(self[k] in ['0', '1', 'off', 'on'])).map(k, k + ' must be 0, 1, off or on, not \"' + self[k] + '\"')[0]"
	// +kubebuilder:validation:XValidation:rule="!('arp_ip_target' in self) || self['arp_ip_target'].matches('^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}(,(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}){0,15}$')",message="arp_ip_target must be 1 to 16 IPv4 addresses separated by commas",messageExpression="'arp_ip_target must be 1 to 16 IPv4 addresses separated by commas, not \"' + self['arp_ip_target'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('ns_ip6_target' in self) || self['ns_ip6_target'].matches('^[0-9a-fA-F:]{2,39}(,[0-9a-fA-F:]{2,39}){0,15}$')",message="ns_ip6_target must be 1 to 16 IPv6 addresses separated by commas",messageExpression="'ns_ip6_target must be 1 to 16 IPv6 addresses separated by commas, not \"' + self['ns_ip6_target'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="!('ad_actor_system' in self) || self['ad_actor_system'].matches('^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$')",message="ad_actor_system must be a MAC address such as 02:00:00:00:00:01",messageExpression="'ad_actor_system must be a MAC address such as 02:00:00:00:00:01, not \"' + self['ad_actor_system'] + '\"'"
	// +kubebuilder:validation:XValidation:rule="['primary', 'active_slave'].all(k, !(k in self) || self[k].matches('^[a-zA-Z0-9_.-]{1,15}$'))",message="primary and active_slave must name a network interface (at most 15 letters, digits, dots, dashes or underscores)",messageExpression="['primary', 'active_slave'].filter(k, k in self && !self[k].matches('^[a-zA-Z0-9_.-]{1,15}$')).map(k, k + ' must name a network interface (at most 15 letters, digits, dots, dashes or underscores), not \"' + self[k] + '\"')[0]"
	// +optional
	ManagementBondingOptions map[string]BondOptionValue `json:"managementBondingOptions,omitempty"`

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

	// BootMode picks how a server gets its install configuration: reinstall (boot an
	// iPXE shell, read the MACs, reinstall with the installer) or single-boot (the
	// installer reads the MAC in iPXE; one boot, no reinstall).
	// +kubebuilder:validation:Enum=reinstall;single-boot
	// +kubebuilder:default=reinstall
	// +optional
	BootMode string `json:"bootMode,omitempty"`
}

// EquinixMetal are the fields of an Equinix Metal pool's servers: the
// device's plan and metro, its billing, network and ports, its tags and the
// Secret of its project. A pool of servers you own (servers) refuses them;
// those that have a default may be written out at it.
//
// The rules below concern these fields alone; the rules that keep the two
// providers apart are the InstanceTemplate's.
// +kubebuilder:validation:XValidation:rule="self.networkingConfiguration.type != 'hybrid' || !self.managementInterface.exists(m, m == 'eth1' || m == 'eth3')",message="in hybrid mode eth1 and eth3 leave bond0 to carry VLANs, so they cannot carry the Harvester management network: use eth0 (and eth2)",fieldPath=".managementInterface"
// +kubebuilder:validation:XValidation:rule="self.networkingConfiguration.type != 'layer2-bonded' || (has(self.networkingConfiguration.interfaceConfiguration) && self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == 'bond0'))",message="layer2-bonded removes every layer-3 address: list bond0 with at least one VLAN in interfaceConfiguration, for the Harvester management network",fieldPath=".networkingConfiguration.interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="self.networkingConfiguration.type != 'layer2-individual' || self.managementInterface.all(m, has(self.networkingConfiguration.interfaceConfiguration) && self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == m))",message="layer2-individual removes every layer-3 address: each managementInterface must be listed in interfaceConfiguration with at least one VLAN, for the Harvester management network",fieldPath=".networkingConfiguration.interfaceConfiguration"
// +kubebuilder:validation:XValidation:rule="!has(self.networkingConfiguration.managementVLAN) || self.networkingConfiguration.type != 'layer2-bonded' || self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == 'bond0' && self.networkingConfiguration.managementVLAN in i.vlanIDS)",message="managementVLAN must be one of the VLANs listed for bond0",fieldPath=".networkingConfiguration.managementVLAN"
// +kubebuilder:validation:XValidation:rule="!has(self.networkingConfiguration.managementVLAN) || self.networkingConfiguration.type != 'layer2-individual' || self.managementInterface.all(m, self.networkingConfiguration.interfaceConfiguration.exists(i, i.name == m && self.networkingConfiguration.managementVLAN in i.vlanIDS))",message="managementVLAN must be listed for every managementInterface",fieldPath=".networkingConfiguration.managementVLAN"
type EquinixMetal struct {
	// Plan is the Equinix Metal server plan slug, e.g. c3.small.x86. Required
	// for an Equinix Metal pool; refused with servers.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Plan string `json:"plan,omitempty"`

	// Metro is the Equinix Metal metro code, e.g. da or SG (case does not
	// matter). Required for an Equinix Metal pool; refused with servers.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[a-zA-Z]{2}$`
	// +optional
	Metro string `json:"metro,omitempty"`

	// BillingCycle of the servers.
	// +kubebuilder:validation:Enum=hourly;daily;monthly;yearly
	// +kubebuilder:default=hourly
	// +optional
	BillingCycle string `json:"billingCycle,omitempty"`

	// Spot requests spot-market servers. Equinix may reclaim them; a reclaimed
	// server is replaced like any server deleted out of band.
	// +optional
	Spot *SpotSettings `json:"spot,omitempty"`

	// NetworkingConfiguration sets the server's network type and VLANs.
	// +kubebuilder:default={}
	// +optional
	NetworkingConfiguration NetworkingConfiguration `json:"networkingConfiguration"`

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

	// IPXEScriptURL overrides the installer iPXE script. Default: the script the addon
	// serves for the Harvester version.
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	IPXEScriptURL string `json:"ipxeScriptURL,omitempty"`
}

// OwnedServers chooses the Inventories a pool of servers you own claims.
//
// +kubebuilder:validation:XValidation:rule="!has(self.addressPool) || (has(self.nameservers) && size(self.nameservers) > 0)",message="a static management address needs nameservers: the Harvester installer refuses a static address without a name server",fieldPath=".nameservers"
// +kubebuilder:validation:XValidation:rule="has(self.addressPool) || !has(self.nameservers)",message="nameservers go with addressPool: with DHCP the servers take their name servers from it",fieldPath=".nameservers"
type OwnedServers struct {
	// Selector chooses Inventories in harvester-system by their labels. A
	// pool claims only a free one: no node of that name, not claimed by
	// another Instance, its BMC reached and logged in to (inventoryNodeReady).
	// The Inventory's primaryDisk, when set, is the install disk (else
	// installDevice), its managementInterfaceMacAddress the management port
	// and its arch the release's architecture. An empty selector chooses
	// every Inventory. Its expressions are checked here, where a person
	// sees the answer, rather than at the claim: an operator other than In,
	// NotIn, Exists or DoesNotExist, values with Exists or DoesNotExist, or
	// none with In or NotIn, would select no server at all.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="each operator must be In, NotIn, Exists or DoesNotExist",fieldPath=".matchExpressions"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="In and NotIn need at least one value",fieldPath=".matchExpressions"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="Exists and DoesNotExist take no values",fieldPath=".matchExpressions"
	Selector metav1.LabelSelector `json:"selector"`

	// BootFirmware is the firmware interface the servers network-boot
	// with: UEFI or Legacy (BIOS). An Inventory's annotation
	// equinix.harvesterhci.io/boot-firmware overrides it for its server,
	// and arm64 servers always boot UEFI. Unset, each server boots in
	// its own mode where its BMC reports one (Redfish
	// BootSourceOverrideMode), and UEFI where it cannot (IPMI). A change
	// rolls the pool out: the firmware decides how a server is installed.
	// +kubebuilder:validation:Enum=UEFI;Legacy
	// +optional
	BootFirmware string `json:"bootFirmware,omitempty"`

	// BootPath pins how the servers boot into the installer: VirtualMedia
	// (the BMC mounts the claim's boot image, a small ISO the boot endpoint
	// serves, and boots it once: no DHCP or PXE to set up), UefiHttp (the
	// BMC tells the UEFI firmware to boot that image's URL once) or PXE
	// (the server boots from the network, DHCP handing iPXE the boot
	// endpoint). Unset, each server is booted the first way its BMC and
	// the boot endpoint allow, in that order (IPMI BMCs: PXE), and
	// status.bootPath says which and why. A pinned path a server's BMC
	// does not offer boots nothing: its Instance says BootPathUnavailable.
	// A change applies to the servers booted after it: it does not roll
	// the pool out, for a joined server does not boot again.
	// +kubebuilder:validation:Enum=VirtualMedia;UefiHttp;PXE
	// +optional
	BootPath string `json:"bootPath,omitempty"`

	// AddressPool names an AddressPool (metal.harvesterhci.io/v1alpha1,
	// Harvester Seeder's kind) in harvester-system, beside the
	// Inventories, for a network without DHCP: each claimed server gets
	// one free address of it as its static management address, recorded
	// in the pool's status.addressAllocation under the server's Inventory
	// as Seeder records a node's, until the server is released. Its boot
	// image and the installed node use that address, the pool's gateway
	// and nameservers. Unset, the servers take their addresses from DHCP.
	// A network boot by PXE needs DHCP all the same: there the address is
	// the installed node's only.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	AddressPool string `json:"addressPool,omitempty"`

	// Nameservers are the IPv4 name servers of servers that take their
	// address from addressPool (an AddressPool has none): the first one
	// in the boot image, every one in the installed node. Required with
	// addressPool, refused without it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:MaxLength=15
	// +kubebuilder:validation:items:Pattern=`^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$`
	// +listType=atomic
	// +optional
	Nameservers []string `json:"nameservers,omitempty"`
}

// Boot paths of a server people own (spec.servers.bootPath,
// status.bootPath), in the order they are tried.
const (
	BootPathVirtualMedia = "VirtualMedia"
	BootPathUefiHTTP     = "UefiHttp"
	BootPathPXE          = "PXE"
)

// Owned reports whether the template makes servers you own (an Inventory
// each) rather than Equinix Metal devices.
func (t *InstanceTemplate) Owned() bool { return t.Servers != nil }

// BondOptionValue is the value of one bond option. It is an alias, so the map
// stays a plain map[string]string for its readers; it exists to carry the
// length bound, which is what the controller accepts (values also go onto the
// installer's kernel command line) and what lets the apiserver afford the value
// checks below.
// +kubebuilder:validation:MaxLength=128
type BondOptionValue = string

// NetworkingConfiguration is the servers' network type and the VLANs of their
// ports.
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
