package bootmedia

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// Spec is one claim's boot image: who boots it and where it goes.
type Spec struct {
	// Arch is the server's architecture as its Inventory says it
	// (spec.arch; "" is amd64).
	Arch string
	// Firmware is what the server boots with: bmc.BootFirmwareUEFI or
	// bmc.BootFirmwareLegacy, or bmc.BootFirmwareAny for an image that
	// boots either way (amd64 only, with a legacy loader at hand).
	Firmware bmc.BootFirmware
	// MAC is the management NIC's address (the Inventory's
	// managementInterfaceMacAddress): the NIC the script brings up.
	MAC string
	// Static is the management address; nil asks DHCP on that NIC.
	Static *StaticAddress
	// ChainURL is where the script goes once the NIC is up: an absolute
	// http or https URL without mac or uuid in its query, which the
	// script adds (the NIC's MAC and the SMBIOS UUID, as the boot
	// endpoint's chain URL wants them).
	ChainURL string
}

// StaticAddress is an IPv4 address for a network without DHCP.
type StaticAddress struct {
	// Address is the server's address and the network's prefix length,
	// e.g. 192.168.10.21/24.
	Address netip.Prefix
	// Gateway is the default route, invalid (the zero Addr) for none:
	// the chain URL's host is then on the same network.
	Gateway netip.Addr
	// DNS is the name server, invalid for none (a chain URL whose host is
	// an address needs none). iPXE keeps one.
	DNS netip.Addr
}

// ErrInvalid wraps every refusal of a Spec or of loaders; the message
// says which value and why.
var ErrInvalid = errors.New("invalid boot image")

// normalized is a Spec checked and in the forms the script writes.
type normalized struct {
	arch     string
	firmware bmc.BootFirmware
	mac      string
	static   *StaticAddress
	chain    string
}

// check validates s. Every value that reaches the script is rebuilt from
// a parsed form (a MAC, an address, a URL whose characters are limited
// to those iPXE reads as one plain word), so nothing a field holds can
// become a command, a setting expansion or a second word.
func (s Spec) check() (normalized, error) {
	arch, err := harvester.NormalizeArch(s.Arch)
	if err != nil {
		return normalized{}, fmt.Errorf("%w: arch: %w", ErrInvalid, err)
	}
	switch s.Firmware {
	case bmc.BootFirmwareUEFI, bmc.BootFirmwareLegacy, bmc.BootFirmwareAny:
	default:
		return normalized{}, fmt.Errorf("%w: unknown firmware %q", ErrInvalid, string(s.Firmware))
	}
	if arch == harvester.ArchARM64 && s.Firmware == bmc.BootFirmwareLegacy {
		return normalized{}, fmt.Errorf("%w: arm64 servers boot UEFI only, not Legacy", ErrInvalid)
	}
	hw, err := net.ParseMAC(strings.TrimSpace(s.MAC))
	if err != nil || len(hw) != 6 {
		return normalized{}, fmt.Errorf("%w: MAC %q is no Ethernet address", ErrInvalid, s.MAC)
	}
	chain, err := checkChainURL(s.ChainURL)
	if err != nil {
		return normalized{}, err
	}
	n := normalized{arch: arch, firmware: s.Firmware, mac: hw.String(), chain: chain}
	if s.Static != nil {
		st, err := s.Static.check()
		if err != nil {
			return normalized{}, err
		}
		n.static = &st
	}
	return n, nil
}

func (a StaticAddress) check() (StaticAddress, error) {
	p := a.Address
	if !p.IsValid() || !p.Addr().Is4() || p.Bits() < 1 || p.Bits() > 30 {
		return a, fmt.Errorf("%w: static address %q: an IPv4 address with a prefix length of 1 to 30 is needed (iPXE's static settings are IPv4)", ErrInvalid, p.String())
	}
	host := p.Addr()
	if host == p.Masked().Addr() || host == lastAddr(p) {
		return a, fmt.Errorf("%w: static address %s is the network's or its broadcast address", ErrInvalid, p)
	}
	if a.Gateway.IsValid() {
		if !a.Gateway.Is4() || !p.Contains(a.Gateway) || a.Gateway == host {
			return a, fmt.Errorf("%w: gateway %s is not another IPv4 address of %s", ErrInvalid, a.Gateway, p.Masked())
		}
	}
	if a.DNS.IsValid() && !a.DNS.Is4() {
		return a, fmt.Errorf("%w: name server %s is not an IPv4 address", ErrInvalid, a.DNS)
	}
	return a, nil
}

// lastAddr is the broadcast address of p (IPv4).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := ^uint32(0) >> p.Bits() // Bits is 1 to 30 here: check refused the rest
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])|host)
	return netip.AddrFrom4(b)
}

// netmask is the dotted mask of a prefix length (iPXE's netmask setting).
func netmask(bits int) string {
	m := net.CIDRMask(bits, 32)
	return net.IP(m).String()
}

// checkChainURL accepts an absolute http(s) URL whose text, as Go writes
// it back, holds only characters that iPXE takes literally in a command's
// argument: no "$" (a setting expansion), no space or control character
// (a word or line break), no quote or backslash; and no mac or uuid
// parameter, which the script adds itself.
func checkChainURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: chain URL: %w", ErrInvalid, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%w: chain URL %q: an http or https URL with a host and no user or fragment is needed", ErrInvalid, raw)
	}
	q := u.Query()
	if q.Has("mac") || q.Has("uuid") {
		return "", fmt.Errorf("%w: chain URL %q names mac or uuid; the script adds them", ErrInvalid, raw)
	}
	out := u.String()
	if out != raw {
		return "", fmt.Errorf("%w: chain URL %q is not in its canonical form (%q)", ErrInvalid, raw, out)
	}
	for _, c := range out {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`$"'\`+"`", c) {
			return "", fmt.Errorf("%w: chain URL %q holds %q, which iPXE would not read as part of one plain word", ErrInvalid, raw, c)
		}
	}
	return out, nil
}

// Script is the iPXE script of the image: it finds the NIC whose MAC is
// the Spec's among net0, net1, ..., brings it up with the static address
// or DHCP (on that NIC alone), and chains to the chain URL with the NIC's
// MAC and the SMBIOS UUID added, trying a few times before it gives the
// server back to its firmware.
func Script(s Spec) (string, error) {
	n, err := s.check()
	if err != nil {
		return "", err
	}
	return n.script(), nil
}

func (n normalized) script() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!ipxe")
	// Read by people at the console; the image holds no secret.
	w("echo Harvester boot image: management NIC %s", n.mac)
	w("set want %s", n.mac)
	w("set i:int32 0")
	w(":find")
	w("isset ${net${i}/mac} || goto nonic")
	w("iseq ${net${i}/mac} ${want} && goto found ||")
	w("inc i")
	w("goto find")
	w(":nonic")
	w("echo No NIC with MAC ${want} - check the managementInterfaceMacAddress of the Inventory")
	w("sleep 10")
	w("exit 1")
	w(":found")
	w("set nic net${i}")
	if st := n.static; st != nil {
		w("echo Static address %s on ${nic}", st.Address)
		w("ifopen ${nic} || goto down")
		w("set ${nic}/ip %s", st.Address.Addr())
		w("set ${nic}/netmask %s", netmask(st.Address.Bits()))
		if st.Gateway.IsValid() {
			w("set ${nic}/gateway %s", st.Gateway)
		}
		if st.DNS.IsValid() {
			w("set ${nic}/dns %s", st.DNS)
		}
	} else {
		w("set tries:int32 0")
		w(":dhcp")
		w("dhcp ${nic} && goto up ||")
		w("inc tries")
		w("iseq ${tries} 3 && goto down ||")
		w("goto dhcp")
		w(":up")
	}
	sep := "?"
	if strings.Contains(n.chain, "?") {
		sep = "&"
	}
	w("set attempt:int32 0")
	w(":chain")
	w("chain %s%smac=${${nic}/mac}&uuid=${uuid} ||", n.chain, sep)
	w("inc attempt")
	w("iseq ${attempt} 5 && goto failed ||")
	w("sleep 5")
	w("goto chain")
	w(":down")
	w("echo Could not bring up ${nic}")
	w(":failed")
	w("echo No answer from the boot endpoint - back to the firmware")
	w("sleep 10")
	w("exit 1")
	return b.String()
}
