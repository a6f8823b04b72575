package harvester

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Fixed parts of every join configuration.
const (
	// SchemeVersion is the installer's config scheme (checked since v1.1.0).
	SchemeVersion = 1
	// InstanceLabel is set on the node through os.labels (kubelet node-labels),
	// so a Node can be matched to its Instance by more than its name.
	InstanceLabel = "equinix.harvesterhci.io/instance"
	// InstalledTTY is the serial-over-SSH console of Equinix Metal servers.
	InstalledTTY = "ttyS1,115200n8"

	cloudConfigHeader = "#cloud-config\n"
	modeJoin          = "join"
	methodDHCP        = "dhcp"
	maxVLANID         = 4094
)

// DefaultNTPServer is used when the caller passes none, as in the installer's
// documentation; a node with a skewed clock fails TLS to the VIP.
const DefaultNTPServer = "0.suse.pool.ntp.org"

// ErrInvalidJoinConfig wraps every RenderJoinConfig validation failure.
var ErrInvalidJoinConfig = errors.New("invalid join configuration")

var passwordHashPattern = regexp.MustCompile(`^\$6\$(rounds=[0-9]{1,9}\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{86}$`)

// JoinConfigInput is everything that varies between join configurations.
type JoinConfigInput struct {
	// ServerURL is the cluster VIP or URL; it is normalised to https://host:443.
	ServerURL string
	// Token is the cluster join token. It is a secret: never log the result.
	Token string
	// Hostname becomes the Node name: the Instance's node name (see
	// Instance.NodeName).
	Hostname string
	// Instance is the value of InstanceLabel, the Instance's name; Hostname
	// when empty (an Equinix Metal server joins under its Instance's name).
	Instance string
	// PasswordHash is a SHA-512 crypt hash ($6$) of the rancher user's console
	// password. Clear text is refused.
	PasswordHash string
	SSHKeys      []string
	// NTPServers default to DefaultNTPServer.
	NTPServers []string
	// MACs of the management ports, in managementInterface order. Must be empty
	// when SingleBoot is set, because the installer concatenates lists from the
	// kernel command line and the config, which would duplicate the NIC.
	MACs []string
	// SingleBoot means the iPXE script passes the management NIC on the kernel
	// command line, so the configuration carries no interfaces list.
	SingleBoot bool
	// BondOptions are the pool's managementBondingOptions; see NormalizeBondOptions.
	BondOptions map[string]string
	// VLANID tags the management network (layer-2 network types only); 0 is untagged.
	VLANID int
	// InstallDevice is the target disk, e.g. /dev/sda.
	InstallDevice string
	// ISOURL is the installer ISO, required for automatic installs.
	ISOURL string
	// Labels are extra node labels; InstanceLabel is reserved.
	Labels map[string]string
	// BGPPeerRoutes makes the server route Equinix Metal's BGP peers
	// (BGPPeerIPs) through its private gateway at every boot, as BGP
	// speakers on it need. Only on a layer-3 management network.
	BGPPeerRoutes bool
	// Static is the management address of a server on a network without
	// DHCP: the management interface's method becomes static, with this
	// address, its mask and gateway, and the name servers go to
	// os.dns_nameservers. nil asks DHCP.
	Static *StaticAddress
}

// String keeps the token and password hash out of logs that print the input
// with %v or %+v.
func (in JoinConfigInput) String() string {
	return fmt.Sprintf("JoinConfigInput{ServerURL:%s Hostname:%s Instance:%s Token:<redacted> PasswordHash:<redacted> SSHKeys:%d MACs:%v SingleBoot:%t BondOptions:%v VLANID:%d InstallDevice:%s ISOURL:%s Labels:%v BGPPeerRoutes:%t Static:%v}",
		in.ServerURL, in.Hostname, in.Instance, len(in.SSHKeys), in.MACs, in.SingleBoot, in.BondOptions, in.VLANID, in.InstallDevice, in.ISOURL, in.Labels, in.BGPPeerRoutes, in.Static)
}

// GoString redacts %#v output the same way.
func (in JoinConfigInput) GoString() string { return in.String() }

// quoted is a string always emitted double-quoted, so values such as "100",
// "on" or a token that looks like a number stay strings for every YAML reader.
type quoted string

func (q quoted) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: string(q)}, nil
}

// The structs below spell every key as the installer documentation does
// (snake_case, except interfaces[].hwAddr). The installer's own structs carry
// camelCase JSON tags and accept snake_case only through its fuzzy name
// mapper, so the keys are written out here rather than derived from Go names.
type joinConfig struct {
	SchemeVersion int           `yaml:"scheme_version"`
	ServerURL     string        `yaml:"server_url"`
	Token         quoted        `yaml:"token"`
	OS            osConfig      `yaml:"os"`
	Install       installConfig `yaml:"install"`
}

type osConfig struct {
	Hostname          string            `yaml:"hostname"`
	Password          quoted            `yaml:"password,omitempty"`
	SSHAuthorizedKeys []string          `yaml:"ssh_authorized_keys,omitempty"`
	NTPServers        []string          `yaml:"ntp_servers,omitempty"`
	DNSNameservers    []string          `yaml:"dns_nameservers,omitempty"`
	Labels            map[string]quoted `yaml:"labels"`
	WriteFiles        []writeFile       `yaml:"write_files,omitempty"`
}

// installConfig deliberately has no `automatic` key: the installer decides to
// install unattended, and to fetch config_url at all, from the kernel command
// line before this document is read, and it merges this document without
// overwriting command-line values. The iPXE scripts set
// harvester.install.automatic=true; a copy here would have no effect.
type installConfig struct {
	Mode                string              `yaml:"mode"`
	ManagementInterface managementInterface `yaml:"management_interface"`
	Device              string              `yaml:"device"`
	ISOURL              string              `yaml:"iso_url"`
	TTY                 string              `yaml:"tty"`
	SkipChecks          bool                `yaml:"skipchecks"`
}

type managementInterface struct {
	Interfaces  []networkInterface `yaml:"interfaces,omitempty"`
	Method      string             `yaml:"method"`
	IP          string             `yaml:"ip,omitempty"`
	SubnetMask  string             `yaml:"subnet_mask,omitempty"`
	Gateway     string             `yaml:"gateway,omitempty"`
	BondOptions map[string]quoted  `yaml:"bond_options"`
	VLANID      int                `yaml:"vlan_id,omitempty"`
}

type networkInterface struct {
	HwAddr quoted `yaml:"hwAddr"`
}

// RenderJoinConfig renders the device userdata that makes the Harvester
// installer join the cluster: a #cloud-config line followed by the join
// configuration. It validates the input the way the installer's automatic mode
// would, so a bad value is reported now rather than by a server stuck in the
// installer. Errors never contain the token or the password hash.
func RenderJoinConfig(in JoinConfigInput) ([]byte, error) {
	cfg, err := buildJoinConfig(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJoinConfig, err)
	}
	var buf bytes.Buffer
	buf.WriteString(cloudConfigHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return nil, fmt.Errorf("encoding join configuration: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding join configuration: %w", err)
	}
	return buf.Bytes(), nil
}

func buildJoinConfig(in JoinConfigInput) (*joinConfig, error) {
	serverURL, err := NormalizeServerURL(in.ServerURL)
	if err != nil {
		return nil, err
	}
	if err := ValidateToken(in.Token); err != nil {
		return nil, err
	}
	osCfg, err := buildOSConfig(in)
	if err != nil {
		return nil, err
	}
	mgmt, err := buildManagementInterface(in)
	if err != nil {
		return nil, err
	}
	if err := validateInstallTarget(in.InstallDevice, in.ISOURL); err != nil {
		return nil, err
	}
	return &joinConfig{
		SchemeVersion: SchemeVersion,
		ServerURL:     serverURL,
		Token:         quoted(in.Token),
		OS:            osCfg,
		Install: installConfig{
			Mode:                modeJoin,
			ManagementInterface: mgmt,
			Device:              in.InstallDevice,
			ISOURL:              in.ISOURL,
			TTY:                 InstalledTTY,
			SkipChecks:          true,
		},
	}, nil
}

func buildOSConfig(in JoinConfigInput) (osConfig, error) {
	if errs := validation.IsDNS1123Subdomain(in.Hostname); len(errs) > 0 {
		return osConfig{}, fmt.Errorf("hostname %q is not a lowercase RFC 1123 subdomain: %s", in.Hostname, strings.Join(errs, "; "))
	}
	if in.PasswordHash != "" && !passwordHashPattern.MatchString(in.PasswordHash) {
		return osConfig{}, errors.New("password must be a SHA-512 crypt hash ($6$...), never clear text")
	}
	keys, err := normalizeSSHKeys(in.SSHKeys)
	if err != nil {
		return osConfig{}, err
	}
	if in.PasswordHash == "" && len(keys) == 0 {
		return osConfig{}, errors.New("no SSH authorized keys or password hash set; the installer requires one")
	}
	ntp, err := normalizeNTPServers(in.NTPServers)
	if err != nil {
		return osConfig{}, err
	}
	instance := in.Instance
	if instance == "" {
		instance = in.Hostname
	}
	labels, err := buildLabels(instance, in.Labels)
	if err != nil {
		return osConfig{}, err
	}
	var files []writeFile
	if in.BGPPeerRoutes {
		if in.VLANID != 0 {
			return osConfig{}, errors.New("BGP peer routes need a layer-3 management network, and this one is on a VLAN")
		}
		f, err := bgpPeerRoutes()
		if err != nil {
			return osConfig{}, err
		}
		files = append(files, f)
	}
	var dns []string
	if in.Static != nil {
		dns = in.Static.nameservers()
	}
	return osConfig{
		DNSNameservers:    dns,
		Hostname:          in.Hostname,
		Password:          quoted(in.PasswordHash),
		SSHAuthorizedKeys: keys,
		NTPServers:        ntp,
		Labels:            labels,
		WriteFiles:        files,
	}, nil
}

func normalizeSSHKeys(in []string) ([]string, error) {
	keys := make([]string, 0, len(in))
	for i, key := range in {
		key = strings.TrimSpace(key)
		if key == "" {
			return nil, fmt.Errorf("SSH key %d is empty", i)
		}
		if strings.ContainsAny(key, "\r\n") {
			return nil, fmt.Errorf("SSH key %d spans several lines; give one key per entry", i)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

func normalizeNTPServers(in []string) ([]string, error) {
	if len(in) == 0 {
		return []string{DefaultNTPServer}, nil
	}
	for _, server := range in {
		if net.ParseIP(server) != nil {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(server); len(errs) > 0 {
			return nil, fmt.Errorf("NTP server %q is neither an IP address nor a DNS name", server)
		}
	}
	return in, nil
}

// buildLabels applies the installer's kubelet label checks (GetKubeletArgs);
// a label kubelet refuses would stop the node from ever registering.
func buildLabels(instance string, extra map[string]string) (map[string]quoted, error) {
	labels := make(map[string]string, len(extra)+1)
	maps.Copy(labels, extra)
	if _, ok := labels[InstanceLabel]; ok {
		return nil, fmt.Errorf("label %s is reserved for the instance name", InstanceLabel)
	}
	labels[InstanceLabel] = instance
	out := make(map[string]quoted, len(labels))
	for name, value := range labels {
		if errs := validation.IsQualifiedName(name); len(errs) > 0 {
			return nil, fmt.Errorf("invalid label name %q: %s", name, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, fmt.Errorf("invalid value %q for label %s: %s", value, name, strings.Join(errs, "; "))
		}
		out[name] = quoted(value)
	}
	return out, nil
}

func buildManagementInterface(in JoinConfigInput) (managementInterface, error) {
	interfaces, err := buildInterfaces(in.MACs, in.SingleBoot)
	if err != nil {
		return managementInterface{}, err
	}
	bond, err := NormalizeBondOptions(in.BondOptions)
	if err != nil {
		return managementInterface{}, err
	}
	if in.VLANID < 0 || in.VLANID > maxVLANID {
		return managementInterface{}, fmt.Errorf("management VLAN %d is outside 0-%d", in.VLANID, maxVLANID)
	}
	quotedBond := make(map[string]quoted, len(bond))
	for k, v := range bond {
		quotedBond[k] = quoted(v)
	}
	mgmt := managementInterface{
		Interfaces:  interfaces,
		Method:      methodDHCP,
		BondOptions: quotedBond,
		VLANID:      in.VLANID,
	}
	if in.Static != nil {
		if err := in.Static.check(); err != nil {
			return managementInterface{}, err
		}
		mgmt.Method = methodStatic
		mgmt.IP = in.Static.Address.Addr().String()
		mgmt.SubnetMask = in.Static.Netmask()
		mgmt.Gateway = in.Static.Gateway.String()
	}
	return mgmt, nil
}

func buildInterfaces(macs []string, singleBoot bool) ([]networkInterface, error) {
	if singleBoot {
		if len(macs) > 0 {
			return nil, errors.New("single-boot mode takes the management MAC from the iPXE kernel command line; pass no MACs, or the installer would list the NIC twice")
		}
		return nil, nil
	}
	if len(macs) == 0 {
		return nil, errors.New("no management interface MAC given")
	}
	seen := make(map[string]bool, len(macs))
	interfaces := make([]networkInterface, 0, len(macs))
	for _, mac := range macs {
		hw, err := net.ParseMAC(strings.TrimSpace(mac))
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("management interface MAC %q is not an Ethernet address", mac)
		}
		normalized := hw.String()
		if seen[normalized] {
			return nil, fmt.Errorf("management interface MAC %s is listed twice", normalized)
		}
		seen[normalized] = true
		interfaces = append(interfaces, networkInterface{HwAddr: quoted(normalized)})
	}
	return interfaces, nil
}

var devicePattern = regexp.MustCompile(`^/dev/\S+$`)

func validateInstallTarget(device, isoURL string) error {
	if !devicePattern.MatchString(device) {
		return fmt.Errorf("install device %q must be a path under /dev", device)
	}
	if isoURL == "" {
		return errors.New("iso_url is required for an automatic install")
	}
	u, err := url.Parse(isoURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("iso_url %q must be an http or https URL", isoURL)
	}
	return nil
}
