package harvester

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// MetadataUserdataURL is where an Equinix device reads its own userdata. It is
// reachable only from the device, and only while it has a layer-3 address.
const MetadataUserdataURL = "https://metadata.platformequinix.com/userdata"

// Paths the iPXE handler serves, below its mount point.
const (
	IPXEPathPrefix     = "/ipxe/"
	shellScriptName    = "shell.ipxe"
	installScriptName  = "install.ipxe"
	singleBootName     = "single-boot.ipxe"
	kernelArgPrefix    = "harvester.install."
	mgmtKernelArg      = kernelArgPrefix + "management_interface."
	singleBootNICCount = 4
)

// ErrInvalidScriptRequest is returned for script URLs or scripts that cannot be built.
var ErrInvalidScriptRequest = errors.New("invalid iPXE script request")

// ShellScript is phase 1 of the reinstall flow. Equinix reports the device
// active as soon as it has handed out this script; the server then idles in
// the iPXE shell while the addon reads its MACs from the API, writes the join
// configuration to userdata and reinstalls it with InstallerScript.
func ShellScript() string {
	return `#!ipxe
# Phase 1 of the reinstall flow: wait here until the addon reinstalls this
# server with the Harvester installer.
dhcp
shell
`
}

// InstallerScript is phase 2 of the reinstall flow: it boots the installer of
// version, which reads the whole join configuration, management MACs included,
// from the device userdata. It holds no per-device or secret data.
func InstallerScript(version string) (string, error) {
	return InstallerScriptFrom("", version)
}

// InstallerScriptFrom is InstallerScript with the release's files on
// mirror (see ArtifactsFrom; empty means the official locations).
func InstallerScriptFrom(mirror, version string) (string, error) {
	a, err := ArtifactsFrom(mirror, version)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!ipxe\n")
	fmt.Fprintf(&b, "# Harvester %s installer (reinstall flow). The join configuration, with\n", version)
	b.WriteString("# the management MACs, comes from the device userdata.\n")
	b.WriteString("dhcp\n")
	writeBoot(&b, a, installerKernelArgs(a, equinixConsole, MetadataUserdataURL))
	return b.String(), nil
}

// SingleBootScript boots the installer of version in one go: iPXE reads the
// MAC of the NIC that answered DHCP and passes it, with the method and bond
// options, on the kernel command line, and the join configuration (rendered
// with SingleBoot, so without an interfaces list) comes from userdata. The
// script depends only on the version and the pool's bond options, never on the
// device, so one URL serves a whole pool.
func SingleBootScript(version string, bondOptions map[string]string) (string, error) {
	return SingleBootScriptFrom("", version, bondOptions)
}

// SingleBootScriptFrom is SingleBootScript with the release's files on
// mirror (see ArtifactsFrom; empty means the official locations).
func SingleBootScriptFrom(mirror, version string, bondOptions map[string]string) (string, error) {
	a, err := ArtifactsFrom(mirror, version)
	if err != nil {
		return "", err
	}
	bond, err := NormalizeBondOptions(bondOptions)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!ipxe\n")
	fmt.Fprintf(&b, "# Harvester %s installer (single boot). The NIC that answered DHCP becomes\n", version)
	b.WriteString("# the management interface; the rest of the join configuration comes from\n")
	b.WriteString("# the device userdata.\n")
	b.WriteString("dhcp\n")
	b.WriteString("goto nic_${ifname} || goto nic_unknown\n")
	for i := range singleBootNICCount {
		fmt.Fprintf(&b, ":nic_net%d\nset mgmtmac ${net%d/mac} && goto kick\n", i, i)
	}
	b.WriteString(":nic_unknown\n")
	b.WriteString("echo Cannot tell the management NIC (ifname ${ifname}); staying in the iPXE shell.\n")
	b.WriteString("shell\n")
	b.WriteString(":kick\n")
	writeBoot(&b, a, append(installerKernelArgs(a, equinixConsole, MetadataUserdataURL), singleBootKernelArgs(bond, "${mgmtmac}", methodDHCP)...))
	return b.String(), nil
}

func writeBoot(b *strings.Builder, a Artifacts, args []string) {
	fmt.Fprintf(b, "kernel %s %s\n", a.KernelURL, strings.Join(args, " "))
	fmt.Fprintf(b, "initrd %s\n", a.InitrdURL)
	b.WriteString("boot\n")
}

// equinixConsole is the serial console Equinix Metal's SOS reaches.
const equinixConsole = "ttyS1,115200"

// installerKernelArgs are the arguments every installer script shares.
// automatic and config_url must be here: the installer reads them from the
// command line to decide whether, and from where, to fetch the rest.
func installerKernelArgs(a Artifacts, console, configURL string) []string {
	return []string{
		"initrd=" + a.InitrdName,
		"ip=dhcp",
		"net.ifnames=1",
		"rd.cos.disable",
		"rd.noverifyssl",
		"root=live:" + a.RootfsURL,
		"console=" + console,
		kernelArgPrefix + "automatic=true",
		kernelArgPrefix + "skipchecks=true",
		kernelArgPrefix + "config_url=" + configURL,
	}
}

// singleBootKernelArgs carry the management NIC. The interfaces list must be
// here only (the installer concatenates lists from both sources); method and
// bond options are scalars and map keys, which merge without duplicates, so the
// userdata may repeat them and the command line wins: the method here must
// be the configuration's (static where it carries an address).
func singleBootKernelArgs(bond map[string]string, mac, method string) []string {
	args := []string{
		mgmtKernelArg + `interfaces="hwAddr:` + mac + `"`,
		mgmtKernelArg + "method=" + method,
	}
	for _, key := range slices.Sorted(maps.Keys(bond)) {
		args = append(args, mgmtKernelArg+"bond_options."+key+"="+bond[key])
	}
	return args
}

// ShellScriptURL is where the handler serves ShellScript below baseURL.
func ShellScriptURL(baseURL string) (string, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return "", err
	}
	return base + IPXEPathPrefix + shellScriptName, nil
}

// InstallerScriptURL is where the handler serves the installer script of
// version for bootMode (reinstall or single-boot) below baseURL. For
// single-boot the normalised bond options travel in the query, so the URL is
// stable for a pool and the script stays free of per-device data.
func InstallerScriptURL(baseURL, version, bootMode string, bondOptions map[string]string) (string, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return "", err
	}
	if err := ValidateVersion(version); err != nil {
		return "", err
	}
	prefix := base + IPXEPathPrefix + version + "/"
	switch bootMode {
	case equinixv1.BootModeReinstall, "":
		return prefix + installScriptName, nil
	case equinixv1.BootModeSingleBoot:
		bond, err := NormalizeBondOptions(bondOptions)
		if err != nil {
			return "", err
		}
		query := url.Values{}
		for k, v := range bond {
			query.Set(k, v)
		}
		return prefix + singleBootName + "?" + query.Encode(), nil
	default:
		return "", fmt.Errorf("%w: unknown boot mode %q", ErrInvalidScriptRequest, bootMode)
	}
}

func parseBaseURL(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("%w: base URL %q: %w", ErrInvalidScriptRequest, baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: base URL %q must be an http or https URL without query or fragment", ErrInvalidScriptRequest, baseURL)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
