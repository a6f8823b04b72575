package addresspool

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

func pool(cidr, gw string, reserved ...string) *seederv1alpha1.AddressPool {
	return &seederv1alpha1.AddressPool{Spec: seederv1alpha1.AddressSpec{CIDR: cidr, Gateway: gw, ReservedAddresses: reserved}}
}

func server(name string) Holder { return Holder{Name: name, Namespace: "harvester-system"} }

func TestAllocateSkipsWhatNoServerMayTake(t *testing.T) {
	// 10.0.2.0/29: .0 is the network, .7 broadcast, .1 the gateway, .2
	// reserved, .3 someone else's: .4, .5, .6 are left, in that order.
	p := pool("10.0.2.0/29", "10.0.2.1", "10.0.2.2")
	p.Status.AddressAllocation = map[string]seederv1alpha1.ObjectReferenceWithKind{
		"10.0.2.3": {Kind: seederv1alpha1.AllocationKindCluster, ObjectReference: seederv1alpha1.ObjectReference{Name: "c", Namespace: "n"}},
	}
	var got []string
	for _, s := range []string{"a", "b", "c"} {
		a, changed, err := Allocate(p, server(s))
		require.NoError(t, err)
		assert.True(t, changed)
		got = append(got, a.String())
	}
	assert.Equal(t, []string{"10.0.2.4/29", "10.0.2.5/29", "10.0.2.6/29"}, got)
	assert.Equal(t, seederv1alpha1.PoolExhausted, p.Status.Status)
	assert.Equal(t, 5, p.Status.AvailableAddresses, "8 addresses less network, broadcast and gateway")
	assert.Equal(t, "10.0.2.0", p.Status.StartAddress)
	assert.Equal(t, "10.0.2.7", p.Status.LastAddress)
	assert.Equal(t, "255.255.255.248", p.Status.Netmask)
	assert.Equal(t, seederv1alpha1.AllocationKindReserved, p.Status.AddressAllocation["10.0.2.2"].Kind, "reserved recorded as Seeder does")
	assert.Equal(t, seederv1alpha1.ObjectReferenceWithKind{Kind: "inventory",
		ObjectReference: seederv1alpha1.ObjectReference{Name: "a", Namespace: "harvester-system"}}, p.Status.AddressAllocation["10.0.2.4"])

	_, _, err := Allocate(p, server("d"))
	assert.ErrorIs(t, err, ErrExhausted)
}

func TestAllocateFindsTheHoldersAddressAgain(t *testing.T) {
	p := pool("192.168.10.0/24", "192.168.10.254")
	first, changed, err := Allocate(p, server("a"))
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, "192.168.10.1/24", first.String())

	// The answer to the write was lost: the next pass reads the pool
	// again and must find the same address, not take a second one.
	again, changed, err := Allocate(p, server("a"))
	require.NoError(t, err)
	assert.False(t, changed, "nothing to write")
	assert.Equal(t, first, again)
	assert.Len(t, p.Status.AddressAllocation, 1)

	// Another namespace's or kind's entry of the same name is not a's.
	p.Status.AddressAllocation["192.168.10.2"] = seederv1alpha1.ObjectReferenceWithKind{Kind: seederv1alpha1.AllocationKindCluster,
		ObjectReference: seederv1alpha1.ObjectReference{Name: "b", Namespace: "harvester-system"}}
	b, _, err := Allocate(p, server("b"))
	require.NoError(t, err)
	assert.Equal(t, "192.168.10.3/24", b.String())
}

func TestReleaseTouchesOnlyTheHoldersEntry(t *testing.T) {
	p := pool("10.0.0.0/30", "10.0.0.1")
	a, _, err := Allocate(p, server("a"))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.2/30", a.String())
	assert.Equal(t, seederv1alpha1.PoolExhausted, p.Status.Status, "a /30 has one address beside its gateway")

	assert.False(t, Release(p, server("b"), a.Addr()), "b does not hold it")
	assert.False(t, Release(p, Holder{Name: "a", Namespace: "elsewhere"}, a.Addr()))
	assert.False(t, Release(p, server("a"), netip.MustParseAddr("10.0.0.1")))
	assert.Len(t, p.Status.AddressAllocation, 1)

	assert.True(t, Release(p, server("a"), a.Addr()))
	assert.Empty(t, p.Status.AddressAllocation)
	assert.Equal(t, seederv1alpha1.PoolReady, p.Status.Status)

	again, _, err := Allocate(p, server("c"))
	require.NoError(t, err)
	assert.Equal(t, a, again, "the freed address is handed out again")
}

func TestAllocateRefusesPoolsThatCannotGiveAnAddress(t *testing.T) {
	for name, p := range map[string]*seederv1alpha1.AddressPool{
		"/31":                 pool("10.0.0.0/31", "10.0.0.0"),
		"/32":                 pool("10.0.0.5/32", "10.0.0.5"),
		"IPv6":                pool("fd00::/64", "fd00::1"),
		"no CIDR":             pool("10.0.0.0", "10.0.0.1"),
		"gateway outside":     pool("10.0.0.0/24", "10.0.1.1"),
		"gateway the network": pool("10.0.0.0/24", "10.0.0.0"),
		"gateway broadcast":   pool("10.0.0.0/24", "10.0.0.255"),
		"gateway no address":  pool("10.0.0.0/24", "gw"),
		"reserved no address": pool("10.0.0.0/24", "10.0.0.1", "ten"),
		"netmask disagrees": {Spec: seederv1alpha1.AddressSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1",
			Netmask: "255.255.0.0"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, changed, err := Allocate(p, server("a"))
			assert.ErrorIs(t, err, ErrInvalid)
			assert.False(t, changed)
			assert.Nil(t, p.Status.AddressAllocation, "nothing written into an invalid pool")
		})
	}
}

func TestAllocateKeepsSeedersStatus(t *testing.T) {
	// A pool Seeder started: its range (Seeder's starts at the network's
	// own address) and mask are kept as Seeder wrote them.
	p := pool("172.16.0.0/24", "172.16.0.1")
	p.Spec.Netmask = "255.255.255.0"
	p.Status = seederv1alpha1.AddressStatus{Status: seederv1alpha1.PoolReady, StartAddress: "172.16.0.0", LastAddress: "172.16.0.255",
		AvailableAddresses: 255, Netmask: "255.255.255.0", AddressAllocation: map[string]seederv1alpha1.ObjectReferenceWithKind{}}
	a, _, err := Allocate(p, server("a"))
	require.NoError(t, err)
	assert.Equal(t, "172.16.0.2/24", a.String())
	assert.Equal(t, 253, p.Status.AvailableAddresses)
	assert.Equal(t, "172.16.0.0", p.Status.StartAddress)
}

func TestLast(t *testing.T) {
	for cidr, want := range map[string]string{"10.0.0.0/8": "10.255.255.255", "10.1.2.0/23": "10.1.3.255", "10.1.2.4/30": "10.1.2.7", "0.0.0.0/1": "127.255.255.255"} {
		assert.Equal(t, want, last(netip.MustParsePrefix(cidr)).String(), cidr)
	}
}
