// Package addresspool hands out the addresses of a Seeder AddressPool
// (metal.harvesterhci.io/v1alpha1) to servers, as Seeder does: each
// address held is a key of status.addressAllocation naming its holder.
// The functions change a pool object in memory only; the caller writes
// its status back with the resourceVersion it read, so that two writers
// never both get one address (the second write conflicts and is tried
// again on a fresh read).
package addresspool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

var (
	// ErrInvalid says the pool's spec cannot give an address (a CIDR that is
	// not IPv4 or leaves no host, a gateway outside it, a bad reserved
	// address or netmask).
	ErrInvalid = errors.New("invalid address pool")
	// ErrExhausted says every address of the pool is held.
	ErrExhausted = errors.New("address pool exhausted")
)

// Holder is what holds an address: a server, by its Inventory.
type Holder struct {
	Name      string
	Namespace string
}

// ref is the allocation entry Seeder writes for a server's address.
func (h Holder) ref() seederv1alpha1.ObjectReferenceWithKind {
	return seederv1alpha1.ObjectReferenceWithKind{Kind: seederv1alpha1.AllocationKindInventory,
		ObjectReference: seederv1alpha1.ObjectReference{Name: h.Name, Namespace: h.Namespace}}
}

// holds reports whether an allocation entry is h's.
func (h Holder) holds(r seederv1alpha1.ObjectReferenceWithKind) bool {
	return r.Kind == seederv1alpha1.AllocationKindInventory && r.Name == h.Name && r.Namespace == h.Namespace
}

// Network is a pool's spec, parsed.
type Network struct {
	// Prefix is the CIDR, masked.
	Prefix netip.Prefix
	// Gateway is the default route, inside Prefix.
	Gateway netip.Addr
	// Reserved are spec.reservedAddresses.
	Reserved []netip.Addr
}

// Parse checks a pool's spec: an IPv4 CIDR of /30 or more addresses (a
// /31 or /32 leaves no address beside the gateway, and iPXE's static
// settings take none smaller), the gateway one of its hosts, the netmask
// (if given) the CIDR's, every reserved address an IPv4 address.
func Parse(spec seederv1alpha1.AddressSpec) (Network, error) {
	p, err := netip.ParsePrefix(spec.CIDR)
	if err != nil {
		return Network{}, fmt.Errorf("%w: cidr %q is no CIDR: %w", ErrInvalid, spec.CIDR, err)
	}
	if !p.Addr().Is4() {
		return Network{}, fmt.Errorf("%w: cidr %s is not IPv4 (static boot and install addresses are IPv4 only)", ErrInvalid, p)
	}
	if p.Bits() > 30 {
		return Network{}, fmt.Errorf("%w: cidr %s leaves no address for a server beside its gateway: give a /30 or larger network", ErrInvalid, p)
	}
	p = p.Masked()
	gw, err := netip.ParseAddr(spec.Gateway)
	if err != nil {
		return Network{}, fmt.Errorf("%w: gateway %q is no IP address", ErrInvalid, spec.Gateway)
	}
	if !gw.Is4() || !p.Contains(gw) || gw == p.Addr() || gw == last(p) {
		return Network{}, fmt.Errorf("%w: gateway %s is not a host address of %s", ErrInvalid, gw, p)
	}
	if spec.Netmask != "" && spec.Netmask != Netmask(p) {
		return Network{}, fmt.Errorf("%w: netmask %s is not that of cidr %s (%s): leave it out or make them agree", ErrInvalid, spec.Netmask, p, Netmask(p))
	}
	n := Network{Prefix: p, Gateway: gw}
	for _, s := range spec.ReservedAddresses {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return Network{}, fmt.Errorf("%w: reserved address %q is no IPv4 address", ErrInvalid, s)
		}
		n.Reserved = append(n.Reserved, a)
	}
	return n, nil
}

// Netmask is p's mask in dotted form.
func Netmask(p netip.Prefix) string {
	return net.IP(net.CIDRMask(p.Bits(), 32)).String()
}

// last is p's broadcast address: its host bits all set.
func last(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) | ^uint32(0)>>p.Bits()
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// hosts counts the addresses of p a server can take: all but the
// network's own, the broadcast address and the gateway.
func (n Network) hosts() int {
	return 1<<(32-n.Prefix.Bits()) - 3
}

// usable reports whether a is an address the pool may hand out at all.
func (n Network) usable(a netip.Addr) bool {
	if !n.Prefix.Contains(a) || a == n.Prefix.Addr() || a == last(n.Prefix) || a == n.Gateway {
		return false
	}
	for _, r := range n.Reserved {
		if a == r {
			return false
		}
	}
	return true
}

// Find returns the address h holds in the pool, if any (the lowest, should
// it hold several).
func Find(pool *seederv1alpha1.AddressPool, h Holder) (netip.Addr, bool) {
	var found []netip.Addr
	for s, r := range pool.Status.AddressAllocation {
		if a, err := netip.ParseAddr(s); err == nil && h.holds(r) {
			found = append(found, a)
		}
	}
	if len(found) == 0 {
		return netip.Addr{}, false
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Less(found[j]) })
	return found[0], true
}

// Allocate gives h an address of the pool: the one it holds already (an
// earlier answer that was lost), else the lowest free one, recorded in
// status.addressAllocation. It returns the address with the network's
// prefix length, and whether the pool changed (and is to be written). The
// status is kept as Seeder keeps it: its range and mask filled in when
// Seeder never did, each reserved address recorded, availableAddresses
// the number a server can take, and status poolExhausted once none is
// left.
func Allocate(pool *seederv1alpha1.AddressPool, h Holder) (netip.Prefix, bool, error) {
	n, err := Parse(pool.Spec)
	if err != nil {
		return netip.Prefix{}, false, err
	}
	before := pool.Status.DeepCopy()
	tend(pool, n)
	if a, ok := Find(pool, h); ok {
		return netip.PrefixFrom(a, n.Prefix.Bits()), changed(before, &pool.Status), nil
	}
	a, ok := firstFree(pool, n)
	if !ok {
		return netip.Prefix{}, changed(before, &pool.Status), fmt.Errorf("%w: every one of the %d addresses of %s is held or reserved",
			ErrExhausted, n.hosts(), n.Prefix)
	}
	pool.Status.AddressAllocation[a.String()] = h.ref()
	pool.Status.Status = poolState(pool, n)
	return netip.PrefixFrom(a, n.Prefix.Bits()), true, nil
}

// Release takes the address a back from h: only when the pool records a
// as h's (another's entry is never touched). It reports whether the pool
// changed.
func Release(pool *seederv1alpha1.AddressPool, h Holder, a netip.Addr) bool {
	r, ok := pool.Status.AddressAllocation[a.String()]
	if !ok || !h.holds(r) {
		return false
	}
	delete(pool.Status.AddressAllocation, a.String())
	if n, err := Parse(pool.Spec); err == nil {
		pool.Status.Status = poolState(pool, n)
	}
	return true
}

// tend fills in what Seeder's own controller writes at a pool's first
// sight (range, mask, the map) when it never saw it, records the reserved
// addresses as it does, and keeps availableAddresses and status true.
func tend(pool *seederv1alpha1.AddressPool, n Network) {
	st := &pool.Status
	if st.AddressAllocation == nil {
		st.AddressAllocation = map[string]seederv1alpha1.ObjectReferenceWithKind{}
	}
	if st.StartAddress == "" {
		st.StartAddress = n.Prefix.Addr().String()
	}
	if st.LastAddress == "" {
		st.LastAddress = last(n.Prefix).String()
	}
	if st.Netmask == "" {
		st.Netmask = Netmask(n.Prefix)
	}
	for _, r := range n.Reserved {
		if _, ok := st.AddressAllocation[r.String()]; !ok {
			st.AddressAllocation[r.String()] = seederv1alpha1.ObjectReferenceWithKind{Kind: seederv1alpha1.AllocationKindReserved,
				ObjectReference: seederv1alpha1.ObjectReference{Name: seederv1alpha1.AllocationReservedName, Namespace: seederv1alpha1.AllocationReservedNamespace}}
		}
	}
	st.AvailableAddresses = n.hosts()
	st.Status = poolState(pool, n)
}

// firstFree is the lowest address a server can take that nobody holds.
// It stops at the first such address, so it walks past at most the
// entries held plus three.
func firstFree(pool *seederv1alpha1.AddressPool, n Network) (netip.Addr, bool) {
	for a := n.Prefix.Addr().Next(); n.Prefix.Contains(a); a = a.Next() {
		if _, held := pool.Status.AddressAllocation[a.String()]; !held && n.usable(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// poolState is poolReady while an address is left, else poolExhausted.
func poolState(pool *seederv1alpha1.AddressPool, n Network) seederv1alpha1.PoolStatus {
	if _, ok := firstFree(pool, n); ok {
		return seederv1alpha1.PoolReady
	}
	return seederv1alpha1.PoolExhausted
}

// changed reports whether the status differs from before.
func changed(before, after *seederv1alpha1.AddressStatus) bool {
	if before.Status != after.Status || before.StartAddress != after.StartAddress || before.LastAddress != after.LastAddress ||
		before.AvailableAddresses != after.AvailableAddresses || before.Netmask != after.Netmask ||
		(before.AddressAllocation == nil) != (after.AddressAllocation == nil) || len(before.AddressAllocation) != len(after.AddressAllocation) {
		return true
	}
	for k, v := range after.AddressAllocation {
		if w, ok := before.AddressAllocation[k]; !ok || w != v {
			return true
		}
	}
	return false
}
