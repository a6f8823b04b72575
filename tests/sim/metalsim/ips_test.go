package metalsim

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *env) reserve(in metalv1.IPReservationRequestInput) *metalv1.IPReservation {
	e.t.Helper()
	res, resp, err := e.client.IPAddressesApi.RequestIPReservation(e.ctx, testProject).
		RequestIPReservationRequest(metalv1.RequestIPReservationRequest{IPReservationRequestInput: &in}).Execute()
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusCreated, resp.StatusCode)
	require.NotNil(e.t, res.IPReservation)
	return res.IPReservation
}

func (e *env) assign(deviceID, address string) (*metalv1.IPAssignment, *http.Response, error) {
	return e.client.DevicesApi.CreateIPAssignment(e.ctx, deviceID).
		IPAssignmentInput(metalv1.IPAssignmentInput{Address: address}).Execute()
}

func (e *env) deviceAddresses(id string) []string {
	e.t.Helper()
	list, _, err := e.client.DevicesApi.FindIPAssignments(e.ctx, id).Execute()
	require.NoError(e.t, err)
	var out []string
	for _, a := range list.IpAddresses {
		out = append(out, a.GetAddress())
	}
	return out
}

func TestDeviceAddresses(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	require.Len(t, d.IpAddresses, 3)
	pub4, pub6, priv4 := d.IpAddresses[0], d.IpAddresses[1], d.IpAddresses[2]
	assert.True(t, pub4.GetPublic())
	assert.True(t, pub4.GetManagement())
	assert.Equal(t, int32(4), pub4.GetAddressFamily())
	assert.Equal(t, int32(31), pub4.GetCidr())
	assert.Equal(t, "255.255.255.254", pub4.GetNetmask())
	assert.Equal(t, int32(6), pub6.GetAddressFamily())
	assert.Equal(t, int32(127), pub6.GetCidr())
	assert.False(t, priv4.GetPublic())
	assert.True(t, netip.MustParsePrefix("10.0.0.0/8").Contains(netip.MustParseAddr(priv4.GetAddress())))
	assert.Equal(t, "/metal/v1/devices/"+d.GetId(), pub4.AssignedTo.Href)

	t.Run("the private /31 comes from the project's /25", func(t *testing.T) {
		assert.Equal(t, int32(31), priv4.GetCidr())
		assert.Equal(t, int32(25), priv4.ParentBlock.GetCidr())
		assert.Equal(t, "255.255.255.128", priv4.ParentBlock.GetNetmask())
		parent := netip.PrefixFrom(netip.MustParseAddr(priv4.ParentBlock.GetNetwork()), 25)
		assert.True(t, parent.Contains(netip.MustParseAddr(priv4.GetAddress())))
		assert.Equal(t, netip.MustParseAddr(priv4.GetGateway()).Next().String(), priv4.GetAddress())
		assert.Equal(t, int32(31), pub4.ParentBlock.GetCidr(), "the public /31 is the device's own block")
	})

	other := e.createActive("node-2")
	seen := map[string]bool{}
	for _, a := range append(d.IpAddresses, other.IpAddresses...) {
		assert.False(t, seen[a.GetAddress()], "addresses are unique")
		seen[a.GetAddress()] = true
	}
	assert.Equal(t, priv4.ParentBlock.GetHref(), other.IpAddresses[2].ParentBlock.GetHref(), "one /25 for the project's metro")

	list, resp, err := e.client.DevicesApi.FindIPAssignments(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Len(t, list.IpAddresses, 3)

	t.Run("the private block is a project reservation", func(t *testing.T) {
		res, _, err := e.client.IPAddressesApi.FindIPReservations(e.ctx, testProject).
			Types([]metalv1.FindIPReservationsTypesParameterInner{metalv1.FINDIPRESERVATIONSTYPESPARAMETERINNER_PRIVATE_IPV4}).
			Include([]string{"assignments"}).Execute()
		require.NoError(t, err)
		require.Len(t, res.IpAddresses, 1)
		b := res.IpAddresses[0].IPReservation
		assert.True(t, b.GetManagement())
		assert.Equal(t, int32(25), b.GetCidr())
		assert.Len(t, b.Assignments, 2)
	})

	t.Run("the block outlives its devices", func(t *testing.T) {
		require.NoError(t, e.sim.DeleteDeviceOutOfBand(other.GetId()))
		got, _, err := e.client.IPAddressesApi.FindIPAddressById(e.ctx, hrefID(priv4.ParentBlock.GetHref())).
			Include([]string{"assignments"}).Execute()
		require.NoError(t, err)
		require.NotNil(t, got.IPReservation)
		assert.Len(t, got.IPReservation.Assignments, 1)
	})
}

func TestElasticIPLifecycle(t *testing.T) {
	e := newEnv(t)
	ips := e.client.IPAddressesApi
	d := e.createActive("node-1")
	d2 := e.createActive("node-2")

	res := e.reserve(metalv1.IPReservationRequestInput{
		Type: "public_ipv4", Quantity: 1, Metro: ptr("da"), Tags: []string{"vip"}, FailOnApprovalRequired: ptr(true),
	})
	assert.Equal(t, metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4, res.GetType())
	assert.Equal(t, "created", res.GetState())
	assert.Equal(t, int32(32), res.GetCidr())
	assert.Equal(t, []string{"vip"}, res.Tags)
	assert.Equal(t, "da", res.Metro.GetCode())
	assert.False(t, res.GetManagement())

	t.Run("list with types and assignments", func(t *testing.T) {
		list, err := ips.FindIPReservations(e.ctx, testProject).
			Types([]metalv1.FindIPReservationsTypesParameterInner{metalv1.FINDIPRESERVATIONSTYPESPARAMETERINNER_PUBLIC_IPV4}).
			Include([]string{"assignments"}).PerPage(1).ExecuteWithPagination()
		require.NoError(t, err)
		assert.Len(t, list.IpAddresses, 3, "two management /31s and the elastic IP")
		for _, item := range list.IpAddresses {
			require.NotNil(t, item.IPReservation)
			assert.Equal(t, metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4, item.IPReservation.GetType())
		}
	})

	var assignmentID string
	t.Run("assign with /32", func(t *testing.T) {
		a, resp, err := e.assign(d.GetId(), res.GetAddress()+"/32")
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, res.GetAddress(), a.GetAddress())
		assert.False(t, a.GetManagement())
		assert.Equal(t, "/metal/v1/ips/"+res.GetId(), a.ParentBlock.GetHref())
		assignmentID = a.GetId()
		assert.Len(t, e.get(d.GetId()).IpAddresses, 4)
	})
	t.Run("assigning again is refused, on another device and on the same one", func(t *testing.T) {
		for _, id := range []string{d2.GetId(), d.GetId()} {
			_, resp, err := e.assign(id, res.GetAddress())
			apiErr := apiErrorOf(t, resp, err, http.StatusUnprocessableEntity, "")
			assert.Equal(t, []string{"Address has already been taken"}, modelMessages(t, apiErr))
		}
	})
	t.Run("get both kinds by id", func(t *testing.T) {
		got, _, err := ips.FindIPAddressById(e.ctx, assignmentID).Execute()
		require.NoError(t, err)
		require.NotNil(t, got.IPAssignment)
		assert.Nil(t, got.IPReservation)
		got, _, err = ips.FindIPAddressById(e.ctx, res.GetId()).Include([]string{"assignments"}).Execute()
		require.NoError(t, err)
		require.NotNil(t, got.IPReservation)
		require.Len(t, got.IPReservation.Assignments, 1)
		assert.Equal(t, assignmentID, got.IPReservation.Assignments[0].GetId())
	})
	t.Run("move to another device with a bare address", func(t *testing.T) {
		resp, err := ips.DeleteIPAddress(e.ctx, assignmentID).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		assert.NotContains(t, e.deviceAddresses(d.GetId()), res.GetAddress())
		_, resp, err = ips.FindIPAddressById(e.ctx, assignmentID).Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "")
		a, _, err := e.assign(d2.GetId(), res.GetAddress())
		require.NoError(t, err)
		assert.Equal(t, int32(32), a.GetCidr())
		assignmentID = a.GetId()
	})
	t.Run("releasing an assigned reservation takes the assignment with it", func(t *testing.T) {
		resp, err := ips.DeleteIPAddress(e.ctx, res.GetId()).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		_, resp, err = ips.FindIPAddressById(e.ctx, res.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "")
		_, resp, err = ips.FindIPAddressById(e.ctx, assignmentID).Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "")
		assert.NotContains(t, e.deviceAddresses(d2.GetId()), res.GetAddress())
		_, resp, err = e.assign(d.GetId(), res.GetAddress())
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Address is not reserved for the project")
	})
	t.Run("a management block cannot be released", func(t *testing.T) {
		resp, err := ips.DeleteIPAddress(e.ctx, hrefID(d.IpAddresses[0].ParentBlock.GetHref())).Execute()
		apiErr := apiErrorOf(t, resp, err, http.StatusUnprocessableEntity, "")
		assert.Contains(t, string(apiErr.Body()), "management block", "the spec lists no 422, so only the body says why")
	})
}

func TestIPReservationRules(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	ips := e.client.IPAddressesApi
	request := func(in metalv1.IPReservationRequestInput) (*http.Response, error) {
		_, resp, err := ips.RequestIPReservation(e.ctx, testProject).
			RequestIPReservationRequest(metalv1.RequestIPReservationRequest{IPReservationRequestInput: &in}).Execute()
		return resp, err
	}
	t.Run("sizes", func(t *testing.T) {
		for q, cidr := range map[int32]int32{1: 32, 2: 31, 4: 30} {
			r := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: q, Metro: ptr("da"), FailOnApprovalRequired: ptr(true)})
			assert.Equal(t, cidr, r.GetCidr())
			assert.Equal(t, r.GetAddress(), netip.MustParsePrefix(r.GetAddress()+"/"+itoa(cidr)).Masked().Addr().String(), "aligned")
		}
	})
	t.Run("approval required", func(t *testing.T) {
		resp, err := request(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 8, Metro: ptr("da"), FailOnApprovalRequired: ptr(true)})
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "requires approval")
		pending := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 8, Metro: ptr("da")})
		assert.Equal(t, "pending", pending.GetState())
		assert.Equal(t, int32(29), pending.GetCidr())
		_, resp, err = e.assign(d.GetId(), pending.GetAddress())
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "pending approval")

		require.NoError(t, e.sim.ApproveIPReservation(pending.GetId()))
		got, _, err := ips.FindIPAddressById(e.ctx, pending.GetId()).Execute()
		require.NoError(t, err)
		assert.Equal(t, "created", got.IPReservation.GetState())
		_, _, err = e.assign(d.GetId(), nthIn(pending.GetAddress(), 3)+"/32")
		require.NoError(t, err, "an address inside the /29")
		assert.ErrorIs(t, e.sim.ApproveIPReservation(pending.GetId()), ErrWrongState)

		denied := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 16, Metro: ptr("da")})
		require.NoError(t, e.sim.DenyIPReservation(denied.GetId()))
		got, _, err = ips.FindIPAddressById(e.ctx, denied.GetId()).Execute()
		require.NoError(t, err)
		assert.Equal(t, "denied", got.IPReservation.GetState())
	})
	t.Run("quantity must be a power of two", func(t *testing.T) {
		resp, err := request(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 3, Metro: ptr("da")})
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "power of 2")
	})
	t.Run("other metro", func(t *testing.T) {
		am := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("am")})
		_, resp, err := e.assign(d.GetId(), am.GetAddress())
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "metro am")
	})
	t.Run("global IPs go anywhere", func(t *testing.T) {
		g := e.reserve(metalv1.IPReservationRequestInput{Type: "global_ipv4", Quantity: 1})
		assert.Equal(t, metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4, g.GetType())
		a, _, err := e.assign(d.GetId(), g.GetAddress())
		require.NoError(t, err)
		assert.True(t, a.GetGlobalIp())
	})
	t.Run("address outside the project's reservations", func(t *testing.T) {
		_, resp, err := e.assign(d.GetId(), "192.0.2.1")
		apiErr := apiErrorOf(t, resp, err, http.StatusUnprocessableEntity, "")
		assert.Equal(t, []string{"Address is not reserved for the project"}, modelMessages(t, apiErr))
	})
	t.Run("another project's reservation", func(t *testing.T) {
		other, _, err := e.other.IPAddressesApi.RequestIPReservation(e.ctx, otherProject).RequestIPReservationRequest(
			metalv1.RequestIPReservationRequest{IPReservationRequestInput: &metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("da")}}).Execute()
		require.NoError(t, err)
		_, resp, err := e.assign(d.GetId(), other.IPReservation.GetAddress())
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "not reserved")
		_, resp, err = ips.FindIPAddressById(e.ctx, other.IPReservation.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusForbidden, "")
	})
}
