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

	other := e.createActive("node-2")
	seen := map[string]bool{}
	for _, a := range append(d.IpAddresses, other.IpAddresses...) {
		assert.False(t, seen[a.GetAddress()], "addresses are unique")
		seen[a.GetAddress()] = true
	}

	list, resp, err := e.client.DevicesApi.FindIPAssignments(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Len(t, list.IpAddresses, 3)
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
		a, resp, err := e.client.DevicesApi.CreateIPAssignment(e.ctx, d.GetId()).
			IPAssignmentInput(metalv1.IPAssignmentInput{Address: res.GetAddress() + "/32"}).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, res.GetAddress(), a.GetAddress())
		assert.False(t, a.GetManagement())
		assert.Equal(t, "/metal/v1/ips/"+res.GetId(), a.ParentBlock.GetHref())
		assignmentID = a.GetId()
		assert.Len(t, e.get(d.GetId()).IpAddresses, 4)
	})
	t.Run("assigning again is refused", func(t *testing.T) {
		_, resp, err := e.client.DevicesApi.CreateIPAssignment(e.ctx, d2.GetId()).
			IPAssignmentInput(metalv1.IPAssignmentInput{Address: res.GetAddress()}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "already assigned")
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
	t.Run("releasing an assigned reservation is refused", func(t *testing.T) {
		resp, err := ips.DeleteIPAddress(e.ctx, res.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "")
	})
	t.Run("move to another device with a bare address", func(t *testing.T) {
		resp, err := ips.DeleteIPAddress(e.ctx, assignmentID).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		a, _, err := e.client.DevicesApi.CreateIPAssignment(e.ctx, d2.GetId()).
			IPAssignmentInput(metalv1.IPAssignmentInput{Address: res.GetAddress()}).Execute()
		require.NoError(t, err)
		assert.Equal(t, int32(32), a.GetCidr())
		_, err = ips.DeleteIPAddress(e.ctx, a.GetId()).Execute()
		require.NoError(t, err)
	})
	t.Run("release", func(t *testing.T) {
		resp, err := ips.DeleteIPAddress(e.ctx, res.GetId()).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		_, resp, err = ips.FindIPAddressById(e.ctx, res.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "")
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
	t.Run("approval required", func(t *testing.T) {
		resp, err := request(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 8, Metro: ptr("da"), FailOnApprovalRequired: ptr(true)})
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "requires approval")
		pending := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 8, Metro: ptr("da")})
		assert.Equal(t, "pending", pending.GetState())
		assert.Equal(t, int32(29), pending.GetCidr())
	})
	t.Run("quantity must be a power of two", func(t *testing.T) {
		resp, err := request(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 3, Metro: ptr("da")})
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "power of 2")
	})
	t.Run("other metro", func(t *testing.T) {
		am := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("am")})
		_, resp, err := e.client.DevicesApi.CreateIPAssignment(e.ctx, d.GetId()).
			IPAssignmentInput(metalv1.IPAssignmentInput{Address: am.GetAddress()}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "metro am")
	})
	t.Run("global IPs go anywhere", func(t *testing.T) {
		g := e.reserve(metalv1.IPReservationRequestInput{Type: "global_ipv4", Quantity: 1})
		assert.Equal(t, metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4, g.GetType())
		a, _, err := e.client.DevicesApi.CreateIPAssignment(e.ctx, d.GetId()).
			IPAssignmentInput(metalv1.IPAssignmentInput{Address: g.GetAddress()}).Execute()
		require.NoError(t, err)
		assert.True(t, a.GetGlobalIp())
	})
	t.Run("address outside the project's reservations", func(t *testing.T) {
		_, resp, err := e.client.DevicesApi.CreateIPAssignment(e.ctx, d.GetId()).
			IPAssignmentInput(metalv1.IPAssignmentInput{Address: "192.0.2.1"}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "not part of a reservation")
	})
}
