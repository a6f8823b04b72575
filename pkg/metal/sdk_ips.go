package metal

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"

	"github.com/equinix/equinix-sdk-go/services/metalv1"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

func (c *sdkClient) ReserveIPs(ctx context.Context, req ReserveIPsRequest) (*IPReservation, error) {
	in := metalv1.IPReservationRequestInput{
		Type:     req.Type,
		Quantity: int32(req.Quantity), //nolint:gosec // G115: a reservation's few addresses
		Metro:    optString(req.Metro),
		Tags:     req.Tags,
		Details:  optString(req.Details),
		// An approval would leave the reservation pending for days; fail
		// instead so the user sees why, unless the caller will wait.
		FailOnApprovalRequired: metalv1.PtrBool(!req.WaitForApproval),
	}
	if in.Type == "" {
		in.Type = IPReservationPublicIPv4
	}
	if in.Quantity <= 0 {
		in.Quantity = 1
	}
	var res *metalv1.RequestIPReservation201Response
	err := c.do(ctx, OpReserveIPs, func(ctx context.Context) (resp *http.Response, err error) {
		res, resp, err = c.api.IPAddressesApi.RequestIPReservation(ctx, c.projectID).
			RequestIPReservationRequest(metalv1.RequestIPReservationRequest{IPReservationRequestInput: &in}).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	if res == nil || res.IPReservation == nil {
		return nil, &failure.Error{Seam: Seam, Op: OpReserveIPs, StatusCode: http.StatusCreated, Class: failure.Unknown,
			Message: "the answer is not an IP reservation"}
	}
	return fromIPReservation(res.IPReservation), nil
}

func (c *sdkClient) ListIPReservations(ctx context.Context, opts ListIPReservationsOptions) ([]IPReservation, error) {
	types := make([]metalv1.FindIPReservationsTypesParameterInner, 0, len(opts.Types))
	for _, t := range opts.Types {
		types = append(types, metalv1.FindIPReservationsTypesParameterInner(t))
	}
	return paginate(ctx, c, OpListIPReservations,
		func(ctx context.Context, page int32) ([]metalv1.IPReservationListIpAddressesInner, *metalv1.Meta, *http.Response, error) {
			r := c.api.IPAddressesApi.FindIPReservations(ctx, c.projectID).
				Include([]string{"assignments"}).Page(page).PerPage(perPage)
			if len(types) > 0 {
				r = r.Types(types)
			}
			list, resp, err := r.Execute()
			if list == nil {
				return nil, nil, resp, err
			}
			return list.IpAddresses, list.Meta, resp, err
		},
		func(item *metalv1.IPReservationListIpAddressesInner) (IPReservation, bool) {
			// VRF reservations are not ours to manage.
			if item.IPReservation == nil {
				return IPReservation{}, false
			}
			r := fromIPReservation(item.IPReservation)
			return *r, opts.Tag == "" || slices.Contains(r.Tags, opts.Tag)
		})
}

func (c *sdkClient) GetIPReservation(ctx context.Context, id string) (*IPReservation, error) {
	if err := requireID(OpGetIPReservation, "IP reservation ID", id); err != nil {
		return nil, err
	}
	var res *metalv1.FindIPAddressById200Response
	err := c.do(ctx, OpGetIPReservation, func(ctx context.Context) (resp *http.Response, err error) {
		res, resp, err = c.api.IPAddressesApi.FindIPAddressById(ctx, id).Include([]string{"assignments"}).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	if res == nil || res.IPReservation == nil {
		return nil, &failure.Error{Seam: Seam, Op: OpGetIPReservation, StatusCode: http.StatusOK, Class: failure.Invalid,
			Message: id + " is not an IP reservation"}
	}
	return fromIPReservation(res.IPReservation), nil
}

// GetIP reads an IP reservation (with its assignments) or an assignment by
// ID; the API answers either for /ips/{id}.
func (c *sdkClient) GetIP(ctx context.Context, id string) (*IP, error) {
	if err := requireID(OpGetIP, "IP ID", id); err != nil {
		return nil, err
	}
	var res *metalv1.FindIPAddressById200Response
	err := c.do(ctx, OpGetIP, func(ctx context.Context) (resp *http.Response, err error) {
		res, resp, err = c.api.IPAddressesApi.FindIPAddressById(ctx, id).Include([]string{"assignments"}).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case res != nil && res.IPReservation != nil:
		return &IP{Reservation: fromIPReservation(res.IPReservation)}, nil
	case res != nil && res.IPAssignment != nil:
		a := fromIPAssignment(res.IPAssignment)
		return &IP{Assignment: &a}, nil
	}
	return nil, &failure.Error{Seam: Seam, Op: OpGetIP, StatusCode: http.StatusOK, Class: failure.Unknown, Message: "the answer is neither an IP reservation nor an assignment"}
}

// ReleaseIPReservation releases a reservation. The API releases an
// assigned one too, taking its assignments with it.
func (c *sdkClient) ReleaseIPReservation(ctx context.Context, id string) error {
	return c.deleteIP(ctx, OpReleaseIPReservation, "IP reservation ID", id)
}

func (c *sdkClient) UnassignIP(ctx context.Context, assignmentID string) error {
	return c.deleteIP(ctx, OpUnassignIP, "IP assignment ID", assignmentID)
}

// deleteIP deletes /ips/{id}: an assignment ID unassigns, a reservation ID
// releases.
func (c *sdkClient) deleteIP(ctx context.Context, op, what, id string) error {
	if err := requireID(op, what, id); err != nil {
		return err
	}
	return c.do(ctx, op, func(ctx context.Context) (*http.Response, error) {
		return c.api.IPAddressesApi.DeleteIPAddress(ctx, id).Execute()
	})
}

// addressTaken is the 422 for an address already assigned (observed in
// OpenNebula's Equinix driver, #5345), to this device or another.
var addressTaken = [][]string{{"already been taken"}}

func (c *sdkClient) AssignIP(ctx context.Context, deviceID, address string) (*IPAddress, error) {
	if err := requireID(OpAssignIP, "device ID", deviceID); err != nil {
		return nil, err
	}
	if err := requireID(OpAssignIP, "address", address); err != nil {
		return nil, err
	}
	var a *metalv1.IPAssignment
	err := c.do(ctx, OpAssignIP, func(ctx context.Context) (resp *http.Response, err error) {
		a, resp, err = c.api.DevicesApi.CreateIPAssignment(ctx, deviceID).
			IPAssignmentInput(metalv1.IPAssignmentInput{Address: address}).Execute()
		return resp, err
	})
	if isAlreadyDone(err, addressTaken...) {
		return c.takenAddress(ctx, deviceID, address, err)
	}
	if err != nil {
		return nil, err
	}
	out := fromIPAssignment(a)
	if out.DeviceID == "" {
		out.DeviceID = deviceID
	}
	return &out, nil
}

// takenAddress tells the two meanings of "already been taken" apart: on
// this device the assignment is in place (say, the answer to an earlier try
// was lost) and is returned; on another device the address has to be
// unassigned there first, which is Busy.
func (c *sdkClient) takenAddress(ctx context.Context, deviceID, address string, taken error) (*IPAddress, error) {
	ips, err := c.ListDeviceIPs(ctx, deviceID)
	if err != nil {
		return nil, err
	}
	want, ok := parseAddress(address)
	for _, ip := range ips {
		if got, err := netip.ParseAddr(ip.Address); ok && err == nil && got == want {
			return &ip, nil
		}
	}
	var e *failure.Error
	if errors.As(taken, &e) {
		busy := *e
		busy.Class = failure.Busy
		busy.Message = e.Message + " (assigned to another device)"
		return nil, &busy
	}
	return nil, taken
}

func (c *sdkClient) ListDeviceIPs(ctx context.Context, deviceID string) ([]IPAddress, error) {
	if err := requireID(OpListDeviceIPs, "device ID", deviceID); err != nil {
		return nil, err
	}
	var list *metalv1.IPAssignmentList
	err := c.do(ctx, OpListDeviceIPs, func(ctx context.Context) (resp *http.Response, err error) {
		list, resp, err = c.api.DevicesApi.FindIPAssignments(ctx, deviceID).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]IPAddress, 0, len(list.GetIpAddresses()))
	for i := range list.GetIpAddresses() {
		ip := fromIPAssignment(&list.IpAddresses[i])
		if ip.DeviceID == "" {
			ip.DeviceID = deviceID
		}
		out = append(out, ip)
	}
	return out, nil
}

func fromIPAssignment(a *metalv1.IPAssignment) IPAddress {
	out := IPAddress{
		ID:            idOf(a.Id, a.Href),
		Address:       a.GetAddress(),
		Network:       a.GetNetwork(),
		Netmask:       a.GetNetmask(),
		Gateway:       a.GetGateway(),
		CIDR:          int(a.GetCidr()),
		AddressFamily: int(a.GetAddressFamily()),
		Public:        a.GetPublic(),
		Management:    a.GetManagement(),
	}
	if a.AssignedTo != nil && a.AssignedTo.Href != "" {
		out.DeviceID = path.Base(a.AssignedTo.Href)
	}
	if pb := a.ParentBlock; pb != nil {
		if pb.GetHref() != "" {
			out.ReservationID = path.Base(pb.GetHref())
		}
		if n, err := netip.ParseAddr(pb.GetNetwork()); err == nil && pb.GetCidr() > 0 && int(pb.GetCidr()) <= n.BitLen() {
			out.ParentNetwork = netip.PrefixFrom(n, int(pb.GetCidr())).String()
		}
	}
	return out
}

func fromIPReservation(r *metalv1.IPReservation) *IPReservation {
	if r == nil {
		return nil
	}
	out := &IPReservation{
		ID:            idOf(r.Id, r.Href),
		Type:          string(r.Type),
		Address:       r.GetAddress(),
		Network:       r.GetNetwork(),
		Netmask:       r.GetNetmask(),
		Gateway:       r.GetGateway(),
		CIDR:          int(r.GetCidr()),
		AddressFamily: int(r.GetAddressFamily()),
		Public:        r.GetPublic(),
		Management:    r.GetManagement(),
		State:         r.GetState(),
		Tags:          append([]string(nil), r.Tags...),
		CreatedAt:     timeOf(r.CreatedAt),
	}
	if r.Metro != nil {
		out.Metro = strings.ToLower(r.Metro.GetCode())
	}
	for i := range r.Assignments {
		out.Assignments = append(out.Assignments, fromIPAssignment(&r.Assignments[i]))
	}
	return out
}
