package harvester

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// methodStatic is the installer's word for a management address given in
// the configuration rather than asked of DHCP.
const methodStatic = "static"

// bootNIC is the name the installer's live system gives the management
// NIC when it has a static address: the kernel's own names are not known
// before the server boots, so the NIC is named by its MAC (dracut's
// ifname=) and the static ip= names it.
const bootNIC = "bootnic"

// StaticAddress is a server's management address on a network without
// DHCP, IPv4 (the installer's and iPXE's static settings are).
type StaticAddress struct {
	// Address is the server's address with the network's prefix length.
	Address netip.Prefix
	// Gateway is the default route, an address of the same network.
	Gateway netip.Addr
	// Nameservers are the installed node's name servers; the installer
	// refuses a static address without one.
	Nameservers []netip.Addr
}

// check refuses what the installer would refuse or misread.
func (s StaticAddress) check() error {
	p := s.Address
	if !p.IsValid() || !p.Addr().Is4() || p.Bits() < 1 || p.Bits() > 30 {
		return fmt.Errorf("static address %s: an IPv4 address with a prefix length of 1 to 30 is needed", p)
	}
	if p.Addr() == p.Masked().Addr() || p.Addr() == broadcast(p) {
		return fmt.Errorf("static address %s is its network's own or broadcast address", p)
	}
	if !s.Gateway.Is4() || !p.Contains(s.Gateway) || s.Gateway == p.Addr() {
		return fmt.Errorf("gateway %s is not another IPv4 address of %s", s.Gateway, p.Masked())
	}
	if len(s.Nameservers) == 0 {
		return errors.New("a static address needs a name server: the installer refuses one without")
	}
	for _, ns := range s.Nameservers {
		if !ns.Is4() {
			return fmt.Errorf("name server %s is not an IPv4 address", ns)
		}
	}
	return nil
}

// Netmask is the address's network mask in dotted form, as the installer
// and the kernel's ip= read it.
func (s StaticAddress) Netmask() string {
	return net.IP(net.CIDRMask(s.Address.Bits(), 32)).String()
}

// nameservers are the name servers as strings.
func (s StaticAddress) nameservers() []string {
	out := make([]string, len(s.Nameservers))
	for i, ns := range s.Nameservers {
		out[i] = ns.String()
	}
	return out
}

// broadcast is the last address of p (IPv4, Bits at most 30).
func broadcast(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := ^uint32(0) >> p.Bits()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// staticKernelArgs bring the live system's management NIC up with the
// static address instead of ip=dhcp: it fetches its root file system and
// its configuration before the configuration can say anything. The NIC is
// named by MAC (ifname=), the address set on that name (ip=), and the
// first name server given (nameserver=).
func staticKernelArgs(s StaticAddress, mac string) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScriptRequest, err)
	}
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return nil, fmt.Errorf("%w: management MAC %q", ErrInvalidScriptRequest, mac)
	}
	return []string{
		"ifname=" + bootNIC + ":" + strings.ToLower(hw.String()),
		fmt.Sprintf("ip=%s::%s:%s::%s:none", s.Address.Addr(), s.Gateway, s.Netmask(), bootNIC),
		"nameserver=" + s.Nameservers[0].String(),
	}, nil
}
