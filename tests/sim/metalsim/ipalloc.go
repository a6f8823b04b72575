package metalsim

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"strings"
)

// allocator hands out address blocks from fixed pools. Counters only grow,
// so no address is ever handed out twice during a simulator's life, even
// after it was released: tests can treat addresses as unique keys.
type allocator struct {
	public4, private4, eip4, global4 uint32
	public6                          uint64
	// privateBase is where the projects' private /25s are carved from; a
	// top-of-rack on loopback moves it into 127.0.0.0/8 so that test BGP
	// speakers can bind the devices' private addresses.
	privateBase netip.Addr
}

var (
	poolPublic4  = netip.MustParseAddr("147.75.0.0")
	poolPrivate4 = netip.MustParseAddr("10.64.0.0")
	poolEIP4     = netip.MustParseAddr("139.178.64.0")
	poolGlobal4  = netip.MustParseAddr("147.28.128.0")
	poolPublic6  = netip.MustParseAddr("2604:1380:4641:c500::")
)

// privateBlockBits is the size of a project's private IPv4 block in a metro:
// a /25, replenished with further /25s as servers use it up.
const privateBlockBits = 25

func newAllocator() allocator { return allocator{privateBase: poolPrivate4} }

// managementPublic4 returns the next /31 for a device's public IPv4.
func (a *allocator) managementPublic4() netip.Prefix {
	p := netip.PrefixFrom(addV4(poolPublic4, a.public4), 31)
	a.public4 += 2
	return p
}

// privateBlock returns the next /25 for a project's private IPv4 space.
func (a *allocator) privateBlock() netip.Prefix {
	p := netip.PrefixFrom(addV4(a.privateBase, a.private4), privateBlockBits)
	a.private4 += 1 << (32 - privateBlockBits)
	return p
}

// managementPublic6 returns the next /127 for a device's public IPv6.
func (a *allocator) managementPublic6() netip.Prefix {
	b := poolPublic6.As16()
	low := binary.BigEndian.Uint64(b[8:]) + a.public6
	binary.BigEndian.PutUint64(b[8:], low)
	a.public6 += 2
	return netip.PrefixFrom(netip.AddrFrom16(b), 127)
}

// elastic returns an aligned block of quantity addresses (a power of two)
// from the public or the global pool.
func (a *allocator) elastic(quantity int, global bool) netip.Prefix {
	size := uint32(quantity)
	cidr := 32 - bits.TrailingZeros32(size)
	counter, base := &a.eip4, poolEIP4
	if global {
		counter, base = &a.global4, poolGlobal4
	}
	if rem := *counter % size; rem != 0 {
		*counter += size - rem
	}
	p := netip.PrefixFrom(addV4(base, *counter), cidr)
	*counter += size
	return p
}

func addV4(base netip.Addr, n uint32) netip.Addr {
	b := base.As4()
	v := binary.BigEndian.Uint32(b[:]) + n
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// nthAddr returns the n-th address of p.
func nthAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr()
	for range n {
		a = a.Next()
	}
	return a
}

// netmask renders a prefix length as the API did: dotted quad for IPv4,
// eight full hex groups for IPv6.
func netmask(p netip.Prefix) string {
	ones := p.Bits()
	if p.Addr().Is4() {
		m := ^uint32(0) << (32 - ones)
		if ones == 0 {
			m = 0
		}
		return fmt.Sprintf("%d.%d.%d.%d", byte(m>>24), byte(m>>16), byte(m>>8), byte(m))
	}
	groups := make([]string, 8)
	for i := range groups {
		n := min(max(ones-16*i, 0), 16)
		groups[i] = fmt.Sprintf("%x", uint16(0xffff<<(16-n)))
		if n == 0 {
			groups[i] = "0"
		}
	}
	return strings.Join(groups, ":")
}

// parseAssignAddress accepts "a.b.c.d", "a.b.c.d/32" or a block in CIDR
// form, as CPEM and CAPP sent both.
func parseAssignAddress(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("parse %q: %w", s, err)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse %q: %w", s, err)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
