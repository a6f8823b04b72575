package joinagent

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// The installer reads its configuration from the kernel command line and from
// config_url, and accepts snake_case, camelCase and lowercase keys
// alike. Keys here are normalized: lowercase, no underscores.
func normKey(k string) string { return strings.ToLower(strings.ReplaceAll(k, "_", "")) }

// cmdlineConfig turns harvester.* kernel arguments into a nested map, as the
// installer's ParseCmdLine does: a bare flag is "true", a repeated key makes a
// list, quotes are stripped, and management_interface.interfaces takes
// "hwAddr:<mac>" / "name:<nic>" / "<mac>" / "<nic>" forms.
func cmdlineConfig(args []string) map[string]interface{} {
	root := map[string]interface{}{}
	for _, a := range args {
		if !strings.HasPrefix(a, "harvester.") {
			continue
		}
		key, val, found := strings.Cut(strings.TrimPrefix(a, "harvester."), "=")
		if !found {
			val = "true"
		}
		val = strings.Trim(val, `"`)
		path := strings.Split(key, ".")
		for i := range path {
			path[i] = normKey(path[i])
		}
		var v interface{} = val
		if strings.Join(path, ".") == "install.managementinterface.interfaces" {
			v = parseInterfaceArg(val)
		}
		setPath(root, path, v)
	}
	return root
}

func parseInterfaceArg(val string) map[string]interface{} {
	out := map[string]interface{}{}
	for _, part := range strings.Split(val, ",") {
		k, v, ok := strings.Cut(part, ":")
		switch {
		case ok && normKey(k) == "hwaddr":
			out["hwaddr"] = strings.Join(strings.Split(part, ":")[1:], ":")
		case ok && normKey(k) == "name":
			out["name"] = v
		case isMAC(part):
			out["hwaddr"] = part
		default:
			out["name"] = part
		}
	}
	return out
}

func isMAC(s string) bool { _, err := net.ParseMAC(s); return err == nil }

func setPath(m map[string]interface{}, path []string, v interface{}) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			m[p] = next
		}
		m = next
	}
	last := path[len(path)-1]
	switch existing := m[last].(type) {
	case nil:
		if _, isMap := v.(map[string]interface{}); isMap {
			m[last] = []interface{}{v}
		} else {
			m[last] = v
		}
	case []interface{}:
		m[last] = append(existing, v)
	default:
		m[last] = []interface{}{existing, v}
	}
}

// userdataConfig parses the config_url document (device userdata).
func userdataConfig(userdata string) (map[string]interface{}, error) {
	var raw map[string]interface{}
	if err := yaml.Unmarshal([]byte(userdata), &raw); err != nil {
		return nil, fmt.Errorf("config_url document is not YAML: %w", err)
	}
	return normalize(raw).(map[string]interface{}), nil
}

func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[normKey(k)] = normalize(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = normalize(x)
		}
		return out
	default:
		return v
	}
}

// merge adds src into dst the way the installer merges config_url into the
// command-line config: existing scalars win, maps merge, lists concatenate.
func merge(dst, src map[string]interface{}) {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok {
			dst[k] = sv
			continue
		}
		switch d := dv.(type) {
		case map[string]interface{}:
			if s, ok := sv.(map[string]interface{}); ok {
				merge(d, s)
			}
		case []interface{}:
			if s, ok := sv.([]interface{}); ok {
				dst[k] = append(d, s...)
			}
		}
	}
}

func get(m map[string]interface{}, path string) interface{} {
	var cur interface{} = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]interface{})
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func getString(m map[string]interface{}, path string) string {
	switch v := get(m, path).(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// Install is what a validated install uses: the configuration that passed
// the checks of an automatic join. Package ownedfleet reads it through
// CheckInstall.
type Install struct {
	Hostname string
	// MACs are the management interfaces, resolved to the server's NICs.
	MACs   []string
	VLANID int
	// Labels are os.labels (the node's labels).
	Labels map[string]string
	Role   string
	ISOURL string
	// Device is the install disk (install.device).
	Device string
	// Files are os.write_files.
	Files []File
	// Method is the management interface's method (dhcp or static); a
	// static one has its IP, SubnetMask and Gateway, and DNS
	// (os.dns_nameservers).
	Method, IP, SubnetMask, Gateway string
	DNS                             []string
}

// File is an entry of os.write_files, which Harvester's OS writes at every
// boot.
type File struct {
	Path, Content, Permissions string
}

var hostnamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validate checks the merged configuration the way an automatic join fails on
// a real server. Messages never quote the token.
func validate(cfg map[string]interface{}, want Expect, deviceMACs map[string]string) (Install, error) {
	var ic Install
	if getString(cfg, "install.automatic") != "true" {
		return ic, fmt.Errorf("install.automatic is not set on the kernel command line: the installer waits at its console")
	}
	if getString(cfg, "schemeversion") != "1" {
		return ic, fmt.Errorf("scheme_version is %q, must be 1", getString(cfg, "schemeversion"))
	}
	if mode := getString(cfg, "install.mode"); mode != "join" {
		return ic, fmt.Errorf("install.mode is %q, want join", mode)
	}
	server, err := formatServerURL(getString(cfg, "serverurl"))
	if err != nil {
		return ic, err
	}
	if server != want.ServerURL {
		return ic, fmt.Errorf("server_url %s is not this cluster (%s)", server, want.ServerURL)
	}
	if getString(cfg, "token") != want.Token {
		return ic, fmt.Errorf("the join token is wrong: the cluster refused the node")
	}
	ic.Hostname = getString(cfg, "os.hostname")
	if !hostnamePattern.MatchString(ic.Hostname) || len(ic.Hostname) > 253 {
		return ic, fmt.Errorf("os.hostname %q is not a lowercase RFC 1123 name", ic.Hostname)
	}
	if getString(cfg, "os.password") == "" && get(cfg, "os.sshauthorizedkeys") == nil {
		return ic, fmt.Errorf("neither os.password nor os.ssh_authorized_keys is set")
	}
	if getString(cfg, "install.isourl") == "" {
		return ic, fmt.Errorf("install.iso_url is required for an automatic install")
	}
	ic.ISOURL = getString(cfg, "install.isourl")
	if ic.Device = getString(cfg, "install.device"); ic.Device == "" {
		return ic, fmt.Errorf("install.device is not set")
	}
	if ic.MACs, err = managementMACs(cfg, deviceMACs); err != nil {
		return ic, err
	}
	method := strings.ToLower(getString(cfg, "install.managementinterface.method"))
	if method != "dhcp" && method != "static" {
		return ic, fmt.Errorf("install.management_interface.method %q is neither dhcp nor static", method)
	}
	ic.Method = method
	if method == "static" {
		if err := staticNetwork(cfg, &ic); err != nil {
			return ic, err
		}
	}
	if v := getString(cfg, "install.managementinterface.vlanid"); v != "" && v != "0" {
		if ic.VLANID, err = strconv.Atoi(v); err != nil || ic.VLANID < 1 || ic.VLANID > 4094 {
			return ic, fmt.Errorf("install.management_interface.vlan_id %q is out of range", v)
		}
	}
	ic.Labels = map[string]string{}
	if labels, ok := get(cfg, "os.labels").(map[string]interface{}); ok {
		for k, v := range labels {
			ic.Labels[k] = fmt.Sprint(v)
		}
	}
	ic.Role = getString(cfg, "install.role")
	if ic.Files, err = writeFiles(cfg); err != nil {
		return ic, err
	}
	return ic, nil
}

// writeFiles reads os.write_files; an entry without an absolute path or
// with permissions that are not octal fails the install, as the OS would
// refuse to write it.
func writeFiles(cfg map[string]interface{}) ([]File, error) {
	items, _ := get(cfg, "os.writefiles").([]interface{})
	var out []File
	for i, it := range items {
		m, _ := it.(map[string]interface{})
		f := File{Path: fmt.Sprint(m["path"]), Content: fmt.Sprint(m["content"]), Permissions: fmt.Sprint(m["permissions"])}
		if m["content"] == nil {
			f.Content = ""
		}
		if !strings.HasPrefix(f.Path, "/") {
			return nil, fmt.Errorf("os.write_files[%d] has no absolute path", i)
		}
		if _, err := strconv.ParseUint(f.Permissions, 8, 32); m["permissions"] != nil && err != nil {
			return nil, fmt.Errorf("os.write_files[%d] permissions %q are not octal", i, f.Permissions)
		}
		out = append(out, f)
	}
	return out, nil
}

// managementMACs resolves the management interfaces to this server's MACs.
// An interface that matches no NIC, or the same NIC twice (lists from the
// command line and the config are concatenated), fails the install.
func managementMACs(cfg map[string]interface{}, deviceMACs map[string]string) ([]string, error) {
	items, _ := get(cfg, "install.managementinterface.interfaces").([]interface{})
	if len(items) == 0 {
		return nil, fmt.Errorf("install.management_interface has no interfaces")
	}
	byMAC := map[string]string{}
	for name, mac := range deviceMACs {
		byMAC[strings.ToLower(mac)] = name
	}
	seen := map[string]bool{}
	var macs []string
	for _, it := range items {
		m, _ := it.(map[string]interface{})
		mac := strings.ToLower(fmt.Sprint(m["hwaddr"]))
		name := fmt.Sprint(m["name"])
		if m["hwaddr"] == nil {
			mac = strings.ToLower(deviceMACs[name])
		}
		nic, ok := byMAC[mac]
		if !ok || mac == "" {
			return nil, fmt.Errorf("management interface %s matches no NIC of this server (NICs: %s)", describeInterface(m), macList(deviceMACs))
		}
		if seen[nic] {
			return nil, fmt.Errorf("management interface %s is listed twice (command line and config lists are concatenated)", nic)
		}
		seen[nic] = true
		macs = append(macs, mac)
	}
	return macs, nil
}

func describeInterface(m map[string]interface{}) string {
	if m["hwaddr"] != nil {
		return fmt.Sprintf("hwAddr %v", m["hwaddr"])
	}
	if m["name"] != nil {
		return fmt.Sprintf("name %v", m["name"])
	}
	return "(neither hwAddr nor name)"
}

func macList(macs map[string]string) string {
	parts := make([]string, 0, len(macs))
	for _, n := range slices.Sorted(maps.Keys(macs)) {
		parts = append(parts, n+"="+macs[n])
	}
	return strings.Join(parts, ", ")
}

// formatServerURL mirrors the installer's getFormattedServerURL: https is
// added, a missing port becomes 443, any other port or a path is refused.
func formatServerURL(raw string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("server_url is empty")
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("server_url %q: %w", raw, err)
	}
	if u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("server_url %q has a path", raw)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	if port != "443" {
		return "", fmt.Errorf("server_url %q: currently non-443 port are not allowed", raw)
	}
	return "https://" + net.JoinHostPort(u.Hostname(), port), nil
}

// staticNetwork checks a static management address as the installer's
// checkNetworks does: name servers, and an IP address each for ip,
// subnet_mask and gateway.
func staticNetwork(cfg map[string]interface{}, ic *Install) error {
	dns, _ := get(cfg, "os.dnsnameservers").([]interface{})
	if len(dns) == 0 {
		return fmt.Errorf("DNS servers are required for static IP address")
	}
	for _, d := range dns {
		ic.DNS = append(ic.DNS, fmt.Sprint(d))
	}
	ic.IP = getString(cfg, "install.managementinterface.ip")
	ic.SubnetMask = getString(cfg, "install.managementinterface.subnetmask")
	ic.Gateway = getString(cfg, "install.managementinterface.gateway")
	for field, v := range map[string]string{"ip": ic.IP, "subnetMask": ic.SubnetMask, "gateway": ic.Gateway} {
		if v == "" {
			return fmt.Errorf("must specify %s in static method", field)
		}
		if net.ParseIP(v) == nil {
			return fmt.Errorf("%s %q is not an IP address", field, v)
		}
	}
	return nil
}
