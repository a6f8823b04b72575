package harvester

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/GehirnInc/crypt/sha512_crypt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

const (
	testToken = "K10secret-token::server:Zx9#q"
	testSSH   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGoldenKeyForTestsOnly user@example"
)

// goldenHash is a real SHA-512 crypt hash with a fixed salt, so golden files
// stay stable.
func goldenHash(t *testing.T) string {
	t.Helper()
	hash, err := sha512_crypt.New().Generate([]byte("golden-password"), []byte("$6$goldensaltgolden"))
	require.NoError(t, err)
	return hash
}

func baseInput(t *testing.T) JoinConfigInput {
	t.Helper()
	a, err := ArtifactsFor("v1.4.1")
	require.NoError(t, err)
	return JoinConfigInput{
		ServerURL:     "145.40.73.10",
		Token:         testToken,
		Hostname:      "harvester-pxe-worker-zaoolitj",
		PasswordHash:  goldenHash(t),
		SSHKeys:       []string{testSSH},
		MACs:          []string{"B8:59:9F:00:00:01"},
		InstallDevice: "/dev/sda",
		ISOURL:        a.ISOURL,
	}
}

func TestRenderJoinConfigGolden(t *testing.T) {
	l2 := equinixv1.InstanceTemplate{
		EquinixMetal: equinixv1.EquinixMetal{
			ManagementInterface: []string{"eth0", "eth1"},
			NetworkingConfiguration: equinixv1.NetworkingConfiguration{
				Type:                   equinixv1.NetworkTypeLayer2Bonded,
				InterfaceConfiguration: []equinixv1.InterfaceConfiguration{{Name: "bond0", VLANIDs: []string{"1000", "1001"}}},
			},
		},
	}
	l2VLAN, err := ManagementVLANID(l2)
	require.NoError(t, err)

	tests := []struct {
		name   string
		golden string
		modify func(in *JoinConfigInput)
	}{
		{
			// The seed's sample pool: hybrid, eth0, balance-tlb with miimon "100".
			name:   "seed sample pool (hybrid, eth0)",
			golden: "join-hybrid-eth0.yaml",
			modify: func(in *JoinConfigInput) {
				in.BondOptions = map[string]string{"mode": "balance-tlb", "miimon": "100"}
			},
		},
		{
			name:   "layer3 with two interfaces and installer default bond",
			golden: "join-layer3-two-nics.yaml",
			modify: func(in *JoinConfigInput) {
				in.MACs = []string{"b8:59:9f:00:00:01", "b8:59:9f:00:00:02"}
				in.NTPServers = []string{"0.pool.ntp.org", "10.0.0.1"}
			},
		},
		{
			// --bgp: the server routes Equinix Metal's BGP peers through its
			// private gateway at every boot.
			name:   "layer3 with BGP peer routes",
			golden: "join-layer3-bgp.yaml",
			modify: func(in *JoinConfigInput) {
				in.BGPPeerRoutes = true
			},
		},
		{
			name:   "layer2-bonded with management VLAN",
			golden: "join-layer2-bonded-vlan.yaml",
			modify: func(in *JoinConfigInput) {
				in.MACs = []string{"b8:59:9f:00:00:01", "b8:59:9f:00:00:02"}
				in.BondOptions = map[string]string{"mode": "802.3ad", "xmit_hash_policy": "layer3+4", "lacp_rate": "fast"}
				in.VLANID = l2VLAN
			},
		},
		{
			name:   "single-boot without interfaces list",
			golden: "join-single-boot.yaml",
			modify: func(in *JoinConfigInput) {
				in.SingleBoot = true
				in.MACs = nil
				in.PasswordHash = ""
				in.BondOptions = map[string]string{"mode": "balance-tlb", "miimon": "100"}
				in.Labels = map[string]string{"equinix.harvesterhci.io/pool": "harvester-pxe-worker"}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput(t)
			tc.modify(&in)
			got, err := RenderJoinConfig(in)
			require.NoError(t, err)
			assertGolden(t, tc.golden, got)
		})
	}
}

// parseRendered reads the rendered userdata the way the installer does (YAML
// v3 into a map) after checking the cloud-config header.
func parseRendered(t *testing.T, data []byte) map[string]any {
	t.Helper()
	require.True(t, strings.HasPrefix(string(data), "#cloud-config\n"), "first line must be #cloud-config")
	doc := map[string]any{}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	return doc
}

func child(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	require.True(t, ok, "key %q missing or not a mapping in %v", key, m)
	return v
}

func TestRenderJoinConfigStructure(t *testing.T) {
	in := baseInput(t)
	in.MACs = []string{"B8:59:9F:00:00:01", "b8-59-9f-00-00-02"}
	in.BondOptions = map[string]string{"mode": "balance-tlb", "miimon": "100"}
	in.Labels = map[string]string{"example.com/rack": "r12"}
	data, err := RenderJoinConfig(in)
	require.NoError(t, err)
	doc := parseRendered(t, data)

	assert.Equal(t, 1, doc["scheme_version"])
	assert.Equal(t, "https://145.40.73.10:443", doc["server_url"])
	assert.Equal(t, testToken, doc["token"])

	osCfg := child(t, doc, "os")
	assert.Equal(t, "harvester-pxe-worker-zaoolitj", osCfg["hostname"])
	assert.Equal(t, in.PasswordHash, osCfg["password"])
	assert.Equal(t, []any{testSSH}, osCfg["ssh_authorized_keys"])
	assert.Equal(t, []any{"0.suse.pool.ntp.org"}, osCfg["ntp_servers"])
	assert.Equal(t, map[string]any{
		InstanceLabel:      "harvester-pxe-worker-zaoolitj",
		"example.com/rack": "r12",
	}, osCfg["labels"])

	install := child(t, doc, "install")
	assert.Equal(t, "join", install["mode"])
	assert.Equal(t, "/dev/sda", install["device"])
	assert.Equal(t, "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso", install["iso_url"])
	assert.Equal(t, "ttyS1,115200n8", install["tty"])
	assert.Equal(t, true, install["skipchecks"])
	assert.NotContains(t, install, "automatic", "automatic belongs on the kernel command line")

	mgmt := child(t, install, "management_interface")
	assert.Equal(t, []any{
		map[string]any{"hwAddr": "b8:59:9f:00:00:01"},
		map[string]any{"hwAddr": "b8:59:9f:00:00:02"},
	}, mgmt["interfaces"])
	assert.Equal(t, "dhcp", mgmt["method"])
	// Values must stay strings: the installer's bond_options is map[string]string.
	assert.Equal(t, map[string]any{"mode": "balance-tlb", "miimon": "100"}, mgmt["bond_options"])
	assert.NotContains(t, mgmt, "vlan_id", "untagged management network")

	assertDocumentedKeys(t, doc, "")
}

// assertDocumentedKeys walks the schema keys (not the data maps labels and
// bond_options) and checks each is spelled as the installer docs spell it.
func assertDocumentedKeys(t *testing.T, v any, path string) {
	t.Helper()
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	switch v := v.(type) {
	case map[string]any:
		for key, value := range v {
			if key != "hwAddr" {
				assert.Regexp(t, snake, key, "key %s.%s is not snake_case", path, key)
			}
			if key == "labels" || key == "bond_options" {
				continue
			}
			assertDocumentedKeys(t, value, path+"."+key)
		}
	case []any:
		for _, item := range v {
			assertDocumentedKeys(t, item, path+"[]")
		}
	}
}

func TestRenderJoinConfigSingleBootOmitsInterfaces(t *testing.T) {
	in := baseInput(t)
	in.SingleBoot = true
	in.MACs = nil
	data, err := RenderJoinConfig(in)
	require.NoError(t, err)
	mgmt := child(t, child(t, parseRendered(t, data), "install"), "management_interface")
	assert.NotContains(t, mgmt, "interfaces")
	assert.Equal(t, "dhcp", mgmt["method"])
	assert.Equal(t, map[string]any{"mode": "active-backup", "miimon": "100"}, mgmt["bond_options"])
}

func TestRenderJoinConfigVLAN(t *testing.T) {
	in := baseInput(t)
	in.VLANID = 1000
	data, err := RenderJoinConfig(in)
	require.NoError(t, err)
	mgmt := child(t, child(t, parseRendered(t, data), "install"), "management_interface")
	assert.Equal(t, 1000, mgmt["vlan_id"])
}

func TestRenderJoinConfigQuotesAmbiguousScalars(t *testing.T) {
	in := baseInput(t)
	in.Token = "12345"
	in.BondOptions = map[string]string{"mode": "active-backup", "miimon": "100", "use_carrier": "on"}
	data, err := RenderJoinConfig(in)
	require.NoError(t, err)
	doc := parseRendered(t, data)
	assert.Equal(t, "12345", doc["token"], "a numeric token must stay a string")
	mgmt := child(t, child(t, doc, "install"), "management_interface")
	assert.Equal(t, "on", child(t, mgmt, "bond_options")["use_carrier"], "YAML 1.1 booleans must stay strings")
}

func TestRenderJoinConfigServerURL(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "145.40.73.10", want: "https://145.40.73.10:443"},
		{in: "https://145.40.73.10", want: "https://145.40.73.10:443"},
		{in: "https://145.40.73.10:443/", want: "https://145.40.73.10:443"},
		{in: "harvester.example.com:443", want: "https://harvester.example.com:443"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			in := baseInput(t)
			in.ServerURL = tc.in
			data, err := RenderJoinConfig(in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, parseRendered(t, data)["server_url"])
		})
	}
}

func TestRenderJoinConfigRejects(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(in *JoinConfigInput)
		wantErr string
		is      error
	}{
		{name: "non-443 port", modify: func(in *JoinConfigInput) { in.ServerURL = "https://10.0.0.1:8443" }, wantErr: "only on port 443", is: ErrInvalidServerURL},
		{name: "path in server URL", modify: func(in *JoinConfigInput) { in.ServerURL = "https://10.0.0.1/v3" }, wantErr: "allows no path", is: ErrInvalidServerURL},
		{name: "http server URL", modify: func(in *JoinConfigInput) { in.ServerURL = "http://10.0.0.1" }, wantErr: "must use https", is: ErrInvalidServerURL},
		{name: "empty server URL", modify: func(in *JoinConfigInput) { in.ServerURL = "" }, wantErr: "address is empty", is: ErrInvalidServerURL},
		{name: "uppercase hostname", modify: func(in *JoinConfigInput) { in.Hostname = "Worker-1" }, wantErr: "lowercase RFC 1123"},
		{name: "hostname too long for the instance label", modify: func(in *JoinConfigInput) { in.Hostname = strings.Repeat("a", 64) }, wantErr: "invalid value"},
		{name: "empty token", modify: func(in *JoinConfigInput) { in.Token = "" }, wantErr: "token is empty", is: ErrInvalidJoinToken},
		{name: "token with newline", modify: func(in *JoinConfigInput) { in.Token = "abc\ndef" }, wantErr: "OWASP", is: ErrInvalidJoinToken},
		{name: "token with non-ASCII", modify: func(in *JoinConfigInput) { in.Token = "tökén" }, wantErr: "OWASP", is: ErrInvalidJoinToken},
		{name: "no credentials", modify: func(in *JoinConfigInput) { in.PasswordHash = ""; in.SSHKeys = nil }, wantErr: "no SSH authorized keys or password"},
		{name: "clear-text password", modify: func(in *JoinConfigInput) { in.PasswordHash = "hunter2" }, wantErr: "SHA-512 crypt hash"},
		{name: "MD5 crypt hash", modify: func(in *JoinConfigInput) { in.PasswordHash = "$1$abcdefgh$0123456789012345678901" }, wantErr: "SHA-512 crypt hash"},
		{name: "multi-line SSH key", modify: func(in *JoinConfigInput) { in.SSHKeys = []string{testSSH + "\n" + testSSH} }, wantErr: "several lines"},
		{name: "empty SSH key", modify: func(in *JoinConfigInput) { in.SSHKeys = []string{" "} }, wantErr: "SSH key 0 is empty"},
		{name: "no MAC in reinstall mode", modify: func(in *JoinConfigInput) { in.MACs = nil }, wantErr: "no management interface MAC"},
		{name: "MACs in single-boot mode", modify: func(in *JoinConfigInput) { in.SingleBoot = true }, wantErr: "pass no MACs"},
		{name: "invalid MAC", modify: func(in *JoinConfigInput) { in.MACs = []string{"eth0"} }, wantErr: "not an Ethernet address"},
		{name: "InfiniBand-length MAC", modify: func(in *JoinConfigInput) {
			in.MACs = []string{"00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01"}
		}, wantErr: "not an Ethernet address"},
		{name: "duplicate MAC", modify: func(in *JoinConfigInput) { in.MACs = []string{"b8:59:9f:00:00:01", "B8:59:9F:00:00:01"} }, wantErr: "listed twice"},
		{name: "unknown bond mode", modify: func(in *JoinConfigInput) { in.BondOptions = map[string]string{"mode": "lacp"} }, wantErr: "unknown mode", is: ErrInvalidBondOptions},
		{name: "bond value with space", modify: func(in *JoinConfigInput) {
			in.BondOptions = map[string]string{"mode": "active-backup", "primary": "eth0 eth1"}
		}, wantErr: "primary", is: ErrInvalidBondOptions},
		{name: "VLAN out of range", modify: func(in *JoinConfigInput) { in.VLANID = 4095 }, wantErr: "outside 0-4094"},
		{name: "negative VLAN", modify: func(in *JoinConfigInput) { in.VLANID = -1 }, wantErr: "outside 0-4094"},
		{name: "no ISO URL", modify: func(in *JoinConfigInput) { in.ISOURL = "" }, wantErr: "iso_url is required"},
		{name: "ISO URL not http", modify: func(in *JoinConfigInput) { in.ISOURL = "ftp://example.com/h.iso" }, wantErr: "http or https"},
		{name: "install device outside /dev", modify: func(in *JoinConfigInput) { in.InstallDevice = "sda" }, wantErr: "under /dev"},
		{name: "reserved instance label", modify: func(in *JoinConfigInput) { in.Labels = map[string]string{InstanceLabel: "other"} }, wantErr: "reserved"},
		{name: "invalid label name", modify: func(in *JoinConfigInput) { in.Labels = map[string]string{"bad key": "x"} }, wantErr: "invalid label name"},
		{name: "invalid NTP server", modify: func(in *JoinConfigInput) { in.NTPServers = []string{"not a host"} }, wantErr: "NTP server"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput(t)
			tc.modify(&in)
			got, err := RenderJoinConfig(in)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, ErrInvalidJoinConfig)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), testToken, "errors must never quote the token")
			assert.NotContains(t, err.Error(), goldenHash(t), "errors must never quote the password hash")
		})
	}
}

func TestRenderJoinConfigDoesNotModifyInput(t *testing.T) {
	in := baseInput(t)
	in.BondOptions = map[string]string{"mode": "balance-tlb"}
	in.Labels = map[string]string{"example.com/a": "b"}
	_, err := RenderJoinConfig(in)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"mode": "balance-tlb"}, in.BondOptions)
	assert.Equal(t, map[string]string{"example.com/a": "b"}, in.Labels)
}

func TestJoinConfigInputRedactsSecrets(t *testing.T) {
	in := baseInput(t)
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, in)
		assert.NotContains(t, out, testToken, format)
		assert.NotContains(t, out, in.PasswordHash, format)
		assert.Contains(t, out, in.Hostname, format)
	}
}

// A server people own joins under its Inventory's name, and its node is
// labelled with the Instance's.
func TestRenderJoinConfigHostnameApartFromInstance(t *testing.T) {
	in := baseInput(t)
	in.Hostname, in.Instance = "rack-a-1", "rack-a-x7k2p"
	data, err := RenderJoinConfig(in)
	require.NoError(t, err)
	osCfg := child(t, parseRendered(t, data), "os")
	assert.Equal(t, "rack-a-1", osCfg["hostname"])
	assert.Equal(t, map[string]any{InstanceLabel: "rack-a-x7k2p"}, osCfg["labels"])
}
