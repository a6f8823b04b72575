package harvester

import (
	"fmt"
	"net"
	"slices"
	"strings"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// DefaultServerConsole is the console a server of one's own installs
// with unless told otherwise: the screen, which its BMC's remote console
// shows on any make of server (serial ports differ between makes).
const DefaultServerConsole = "tty1"

// ServerScript is what the installer script of one server of one's own
// depends on: unlike the Equinix scripts, it is per server, because the
// configuration URL carries the server's claim.
type ServerScript struct {
	// Mirror holds the release's files (see ArtifactsFrom); empty means
	// the official locations.
	Mirror  string
	Version string
	// Arch is the server's (see NormalizeArch; "" is amd64).
	Arch string
	// ConfigURL is where the installer reads the whole join
	// configuration (harvester.install.config_url).
	ConfigURL string
	// Console is the kernel's console= value; empty means
	// DefaultServerConsole.
	Console string
	// BootMode as the pool's spec.bootMode: reinstall (or empty) leaves
	// the management interface to the configuration; single-boot puts
	// MAC, the method and BondOptions on the kernel command line, so the
	// configuration must then carry no interfaces list.
	BootMode    string
	MAC         string
	BondOptions map[string]string
	// Static is the server's management address on a network without
	// DHCP: the live system brings the NIC of MAC up with it rather than
	// asking DHCP. nil asks DHCP.
	Static *StaticAddress
}

// ServerInstallerScript is the iPXE script that installs Harvester on a
// server of one's own. The script runs in the iPXE that chained to it,
// whose network is already up, so it does not ask DHCP again.
func ServerInstallerScript(in ServerScript) (string, error) {
	a, err := ArtifactsForArch(in.Mirror, in.Version, in.Arch)
	if err != nil {
		return "", err
	}
	if err := validateConfigURL(in.ConfigURL); err != nil {
		return "", err
	}
	console := in.Console
	if console == "" {
		console = DefaultServerConsole
	}
	if strings.ContainsAny(console, " \t\n\"") {
		return "", fmt.Errorf("%w: console %q", ErrInvalidScriptRequest, console)
	}
	args := installerKernelArgs(a, console, in.ConfigURL)
	method := methodDHCP
	if in.Static != nil {
		static, err := staticKernelArgs(*in.Static, in.MAC)
		if err != nil {
			return "", err
		}
		args = append(slices.DeleteFunc(args, func(a string) bool { return a == "ip=dhcp" }), static...)
		method = methodStatic
	}
	switch in.BootMode {
	case "", equinixv1.BootModeReinstall:
	case equinixv1.BootModeSingleBoot:
		hw, err := net.ParseMAC(in.MAC)
		if err != nil || len(hw) != 6 {
			return "", fmt.Errorf("%w: management MAC %q", ErrInvalidScriptRequest, in.MAC)
		}
		bond, err := NormalizeBondOptions(in.BondOptions)
		if err != nil {
			return "", err
		}
		args = append(args, singleBootKernelArgs(bond, hw.String(), method)...)
	default:
		return "", fmt.Errorf("%w: unknown boot mode %q", ErrInvalidScriptRequest, in.BootMode)
	}
	var b strings.Builder
	b.WriteString("#!ipxe\n")
	fmt.Fprintf(&b, "# Harvester %s (%s) installer for a server of one's own. The join\n", a.Version, a.Arch)
	b.WriteString("# configuration comes from config_url.\n")
	writeBoot(&b, a, args)
	return b.String(), nil
}

// validateConfigURL refuses what would break the kernel command line or
// iPXE's parsing of it: the URL is one word of both.
func validateConfigURL(raw string) error {
	if raw == "" || strings.ContainsAny(raw, " \t\n\"${}") {
		return fmt.Errorf("%w: config URL %q", ErrInvalidScriptRequest, raw)
	}
	if _, err := parseBaseURL(strings.SplitN(raw, "?", 2)[0]); err != nil {
		return err
	}
	return nil
}
