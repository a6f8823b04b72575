package metal

import (
	"net/netip"
	"time"
)

// IPAddress is an address assigned to a device (an IP assignment).
type IPAddress struct {
	ID      string
	Address string
	Network string
	Netmask string
	Gateway string
	CIDR    int
	// AddressFamily is 4 or 6.
	AddressFamily int
	Public        bool
	// Management is true for the addresses the device got at provisioning.
	Management bool
	// DeviceID is the device the address is assigned to, when the API says so.
	DeviceID string
	// ReservationID is the block the address comes from, when the API says so.
	ReservationID string
	// ParentNetwork is that block in CIDR form ("10.70.1.0/25"), when the API
	// says so. For the private management address it is the network the
	// Equinix CCM annotates as network-4-private.
	ParentNetwork string
}

// IP reservation types.
const (
	IPReservationPublicIPv4  = "public_ipv4"
	IPReservationGlobalIPv4  = "global_ipv4"
	IPReservationPrivateIPv4 = "private_ipv4"
	IPReservationPublicIPv6  = "public_ipv6"
)

// IP reservation states.
const (
	IPReservationPending = "pending"
	IPReservationCreated = "created"
	IPReservationDenied  = "denied"
)

// IPReservation is a reserved block of addresses, such as an Elastic IP.
type IPReservation struct {
	ID            string
	Type          string
	Address       string
	Network       string
	Netmask       string
	Gateway       string
	CIDR          int
	AddressFamily int
	Public        bool
	Management    bool
	// State is pending, created or denied.
	State string
	Metro string
	Tags  []string
	// Assignments are the device assignments of addresses in this block.
	Assignments []IPAddress
	CreatedAt   time.Time
}

// Prefix is the reserved block, or false when the API gave no usable one.
func (r *IPReservation) Prefix() (netip.Prefix, bool) {
	network := r.Network
	if network == "" {
		network = r.Address
	}
	a, err := netip.ParseAddr(network)
	if err != nil || r.CIDR <= 0 || r.CIDR > a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, r.CIDR).Masked(), true
}

// Contains reports whether address (bare or "a.b.c.d/32") is in the block.
func (r *IPReservation) Contains(address string) bool {
	p, ok := r.Prefix()
	if !ok {
		return false
	}
	a, ok := parseAddress(address)
	return ok && p.Contains(a)
}

// AssignmentOf returns the assignment of address, if the block has one.
func (r *IPReservation) AssignmentOf(address string) (IPAddress, bool) {
	want, ok := parseAddress(address)
	if !ok {
		return IPAddress{}, false
	}
	for _, a := range r.Assignments {
		if got, err := netip.ParseAddr(a.Address); err == nil && got == want {
			return a, true
		}
	}
	return IPAddress{}, false
}

// parseAddress reads "a.b.c.d" or "a.b.c.d/32".
func parseAddress(s string) (netip.Addr, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr(), true
	}
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

// IP is what GetIP found: a reservation or an assignment, never both.
type IP struct {
	Reservation *IPReservation
	Assignment  *IPAddress
}

// ReserveIPsRequest asks for a block of addresses. Type defaults to
// public_ipv4 and Quantity to 1.
type ReserveIPsRequest struct {
	Type     string
	Quantity int
	Metro    string
	Tags     []string
	Details  string
	// WaitForApproval lets the API keep a request that needs a manual
	// approval (larger blocks) pending instead of refusing it; poll
	// GetIPReservation until its State is created or denied.
	WaitForApproval bool
}

// ListIPReservationsOptions filters ListIPReservations. Tag is matched on our
// side because the API has no tag filter for IP reservations; empty Types
// lists every type.
type ListIPReservationsOptions struct {
	Tag   string
	Types []string
}
