package metalsim

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hrefID(href string) string { return href[strings.LastIndexByte(href, '/')+1:] }

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// nthIn returns the n-th address after addr.
func nthIn(addr string, n int) string {
	a := netip.MustParseAddr(addr)
	for range n {
		a = a.Next()
	}
	return a.String()
}

func TestAddIPReservation(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")

	id, err := e.sim.AddIPReservation(testProject, IPReservationSpec{CIDR: "10.0.0.10", Metro: "da", Tags: []string{"vip"}})
	require.NoError(t, err)
	got, _, err := e.client.IPAddressesApi.FindIPAddressById(e.ctx, id).Execute()
	require.NoError(t, err)
	res := got.IPReservation
	require.NotNil(t, res)
	assert.Equal(t, "10.0.0.10", res.GetAddress())
	assert.Equal(t, int32(32), res.GetCidr())
	assert.Equal(t, "created", res.GetState())
	assert.Equal(t, metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4, res.GetType())
	assert.Equal(t, []string{"vip"}, res.Tags)

	a, _, err := e.assign(d.GetId(), "10.0.0.10/32")
	require.NoError(t, err, "the VIP is now an Elastic IP of the project")
	assert.Equal(t, "10.0.0.10", a.GetAddress())

	t.Run("bad input", func(t *testing.T) {
		for _, spec := range []IPReservationSpec{
			{CIDR: "nope", Metro: "da"},
			{CIDR: "10.0.0.9/30", Metro: "da"},
			{CIDR: "2604::1/128", Metro: "da"},
			{CIDR: "0.0.0.0/0", Metro: "da"},
			{CIDR: "10.1.0.1", Metro: "xx"},
			{CIDR: "10.1.0.1", Metro: "da", Type: "public_ipv6"},
			{CIDR: "10.1.0.1", Type: "private_ipv4"},
		} {
			_, err := e.sim.AddIPReservation(testProject, spec)
			assert.ErrorIs(t, err, ErrInvalid, "%+v", spec)
		}
		_, err := e.sim.AddIPReservation("no-such-project", IPReservationSpec{CIDR: "10.1.0.1", Metro: "da"})
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = e.sim.AddIPReservation(testProject, IPReservationSpec{CIDR: "10.0.0.8/29", Metro: "da"})
		assert.ErrorIs(t, err, ErrAddressInUse)
	})

	t.Run("pool addresses skip it", func(t *testing.T) {
		_, err := e.sim.AddIPReservation(testProject, IPReservationSpec{CIDR: "139.178.64.0/29", Metro: "da"})
		require.NoError(t, err)
		r := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 4, Metro: ptr("da")})
		assert.False(t, netip.MustParsePrefix("139.178.64.0/29").Contains(netip.MustParseAddr(r.GetAddress())), r.GetAddress())
	})

	t.Run("private: its assignments are the device's private addresses", func(t *testing.T) {
		pid, err := e.sim.AddIPReservation(testProject, IPReservationSpec{CIDR: "10.99.0.4/32", Metro: "da", Type: "private_ipv4"})
		require.NoError(t, err)
		p, _, err := e.client.IPAddressesApi.FindIPAddressById(e.ctx, pid).Execute()
		require.NoError(t, err)
		assert.Equal(t, metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4, p.IPReservation.GetType())
		assert.False(t, p.IPReservation.GetPublic())
		_, _, err = e.assign(d.GetId(), "10.99.0.4/32")
		require.NoError(t, err)
		dev, _, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
		require.NoError(t, err)
		var found bool
		for _, ip := range dev.IpAddresses {
			if ip.GetAddress() == "10.99.0.4" {
				found = true
				assert.False(t, ip.GetPublic())
				assert.False(t, ip.GetManagement())
			}
		}
		assert.True(t, found, "the device lists the private Elastic IP")
	})

	t.Run("global", func(t *testing.T) {
		gid, err := e.sim.AddIPReservation(otherProject, IPReservationSpec{CIDR: "147.28.200.0/31", Type: "global_ipv4"})
		require.NoError(t, err)
		g, _, err := e.other.IPAddressesApi.FindIPAddressById(e.ctx, gid).Execute()
		require.NoError(t, err)
		assert.Equal(t, metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4, g.IPReservation.GetType())
		assert.Nil(t, g.IPReservation.Metro)
	})
}

func TestIPReservationPagination(t *testing.T) {
	e := newEnv(t)
	for range 5 {
		e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("da")})
	}
	page, _, err := e.client.IPAddressesApi.FindIPReservations(e.ctx, testProject).Page(2).PerPage(2).Execute()
	require.NoError(t, err)
	assert.Len(t, page.IpAddresses, 2)
	assert.Equal(t, int32(2), page.Meta.GetCurrentPage())
	assert.Equal(t, int32(3), page.Meta.GetLastPage())
	assert.Equal(t, int32(5), page.Meta.GetTotal())
	all, err := e.client.IPAddressesApi.FindIPReservations(e.ctx, testProject).PerPage(2).ExecuteWithPagination()
	require.NoError(t, err)
	assert.Len(t, all.IpAddresses, 5)
}

// Assignments go with their device however it goes.
func TestAssignmentsVanishWithTheirDevice(t *testing.T) {
	e := newEnv(t)
	res := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 4, Metro: ptr("da")})
	assignments := func() []metalv1.IPAssignment {
		got, _, err := e.client.IPAddressesApi.FindIPAddressById(e.ctx, res.GetId()).Include([]string{"assignments"}).Execute()
		require.NoError(t, err)
		return got.IPReservation.Assignments
	}
	deleted := e.createActive("deleted")
	oob := e.createActive("out-of-band")
	_, _, err := e.assign(deleted.GetId(), nthIn(res.GetAddress(), 1))
	require.NoError(t, err)
	_, _, err = e.assign(oob.GetId(), nthIn(res.GetAddress(), 2))
	require.NoError(t, err)
	require.Len(t, assignments(), 2)

	_, err = e.client.DevicesApi.DeleteDevice(e.ctx, deleted.GetId()).Execute()
	require.NoError(t, err)
	e.clock.Advance(DefaultTimings().Deprovision)
	require.NoError(t, e.sim.DeleteDeviceOutOfBand(oob.GetId()))
	assert.Empty(t, assignments())

	d := e.createActive("next")
	_, _, err = e.assign(d.GetId(), nthIn(res.GetAddress(), 1))
	require.NoError(t, err, "the address is free again")
}

// Every injected fault kind hits the IP operations like any other.
func TestIPOperationFaults(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	res := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("da")})

	e.sim.InjectFault(Fault{Kind: FaultDropConnection, Operations: []string{OpCreateIPAssignment}, AfterStore: true, Count: 1})
	_, resp, err := e.assign(d.GetId(), res.GetAddress())
	require.Error(t, err)
	assert.Nil(t, resp, "the client saw no answer")
	assert.Contains(t, e.deviceAddresses(d.GetId()), res.GetAddress(), "but the assignment was stored")

	e.sim.InjectFault(Fault{Kind: FaultRateLimit, Operations: []string{OpFindIPReservations}, Count: 1})
	_, resp, err = e.client.IPAddressesApi.FindIPReservations(e.ctx, testProject).Execute()
	requireAPIError(t, resp, err, http.StatusTooManyRequests, "")

	e.sim.InjectFault(Fault{Kind: FaultServerError, Status: 503, Operations: []string{OpDeleteIPAddress}, Count: 1})
	resp, err = e.client.IPAddressesApi.DeleteIPAddress(e.ctx, res.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusServiceUnavailable, "")

	e.sim.InjectFault(Fault{Kind: FaultForbidden, Operations: []string{OpFindIPAddressByID}, Count: 1})
	_, resp, err = e.client.IPAddressesApi.FindIPAddressById(e.ctx, res.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusForbidden, "")

	e.sim.InjectFault(Fault{Kind: FaultServerError, Operations: []string{OpRequestIPReservation}, AfterStore: true, Count: 1})
	_, resp, err = e.client.IPAddressesApi.RequestIPReservation(e.ctx, testProject).RequestIPReservationRequest(
		metalv1.RequestIPReservationRequest{IPReservationRequestInput: &metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("da")}}).Execute()
	requireAPIError(t, resp, err, http.StatusInternalServerError, "")
	list, err := e.client.IPAddressesApi.FindIPReservations(e.ctx, testProject).
		Types([]metalv1.FindIPReservationsTypesParameterInner{metalv1.FINDIPRESERVATIONSTYPESPARAMETERINNER_PUBLIC_IPV4}).ExecuteWithPagination()
	require.NoError(t, err)
	elastic := 0
	for _, item := range list.IpAddresses {
		if !item.IPReservation.GetManagement() {
			elastic++
		}
	}
	assert.Equal(t, 2, elastic, "the reservation behind the 500 exists")
}
