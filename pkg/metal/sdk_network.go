package metal

import (
	"context"
	"net/http"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

func (c *sdkClient) ListVLANs(ctx context.Context, metro string) ([]VirtualNetwork, error) {
	var list *metalv1.VirtualNetworkList
	err := c.do(ctx, OpListVLANs, func(ctx context.Context) (resp *http.Response, err error) {
		r := c.api.VLANsApi.FindVirtualNetworks(ctx, c.projectID)
		if metro != "" {
			r = r.Metro(metro)
		}
		list, resp, err = r.Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]VirtualNetwork, 0, len(list.GetVirtualNetworks()))
	for i := range list.GetVirtualNetworks() {
		out = append(out, *fromVirtualNetwork(&list.VirtualNetworks[i]))
	}
	return out, nil
}

func (c *sdkClient) CreateVLAN(ctx context.Context, req CreateVLANRequest) (*VirtualNetwork, error) {
	in := metalv1.VirtualNetworkCreateInput{
		Metro:       optString(req.Metro),
		Description: optString(req.Description),
		Tags:        req.Tags,
	}
	if req.VXLAN != 0 {
		in.Vxlan = metalv1.PtrInt32(int32(req.VXLAN))
	}
	var vn *metalv1.VirtualNetwork
	err := c.do(ctx, OpCreateVLAN, func(ctx context.Context) (resp *http.Response, err error) {
		vn, resp, err = c.api.VLANsApi.CreateVirtualNetwork(ctx, c.projectID).VirtualNetworkCreateInput(in).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return fromVirtualNetwork(vn), nil
}

func (c *sdkClient) GetVLAN(ctx context.Context, id string) (*VirtualNetwork, error) {
	if err := requireID(OpGetVLAN, "VLAN ID", id); err != nil {
		return nil, err
	}
	var vn *metalv1.VirtualNetwork
	err := c.do(ctx, OpGetVLAN, func(ctx context.Context) (resp *http.Response, err error) {
		vn, resp, err = c.api.VLANsApi.GetVirtualNetwork(ctx, id).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return fromVirtualNetwork(vn), nil
}

func (c *sdkClient) DeleteVLAN(ctx context.Context, id string) error {
	if err := requireID(OpDeleteVLAN, "VLAN ID", id); err != nil {
		return err
	}
	return c.do(ctx, OpDeleteVLAN, func(ctx context.Context) (*http.Response, error) {
		return c.api.VLANsApi.DeleteVirtualNetwork(ctx, id).Execute()
	})
}

func (c *sdkClient) ReserveIPs(ctx context.Context, req ReserveIPsRequest) (*IPReservation, error) {
	in := metalv1.IPReservationRequestInput{
		Type:     req.Type,
		Quantity: int32(req.Quantity),
		Metro:    optString(req.Metro),
		Tags:     req.Tags,
		Details:  optString(req.Details),
		// An approval would leave the reservation pending for days; fail
		// instead so the user sees why.
		FailOnApprovalRequired: metalv1.PtrBool(true),
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
		return nil, &Error{Op: OpReserveIPs, StatusCode: http.StatusCreated, Class: ClassUnknown,
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
			return *r, opts.Tag == "" || hasString(r.Tags, opts.Tag)
		})
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
		return nil, &Error{Op: OpGetIPReservation, StatusCode: http.StatusOK, Class: ClassInvalid,
			Message: id + " is not an IP reservation"}
	}
	return fromIPReservation(res.IPReservation), nil
}

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
	if err != nil {
		return nil, err
	}
	out := fromIPAssignment(a)
	if out.DeviceID == "" {
		out.DeviceID = deviceID
	}
	return &out, nil
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

func (c *sdkClient) GetBGPConfig(ctx context.Context) (*BGPConfig, error) {
	var cfg *metalv1.BgpConfig
	err := c.do(ctx, OpGetBGPConfig, func(ctx context.Context) (resp *http.Response, err error) {
		cfg, resp, err = c.api.BGPApi.FindBgpConfigByProject(ctx, c.projectID).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return fromBGPConfig(cfg), nil
}

func (c *sdkClient) CreateBGPConfig(ctx context.Context, req BGPConfigRequest) error {
	in := metalv1.BgpConfigRequestInput{
		Asn:            req.ASN,
		DeploymentType: metalv1.BgpConfigRequestInputDeploymentType(req.DeploymentType),
		Md5:            optString(string(req.MD5)),
		UseCase:        optString(req.UseCase),
	}
	if in.DeploymentType == "" {
		in.DeploymentType = metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL
	}
	err := c.do(ctx, OpCreateBGPConfig, func(ctx context.Context) (*http.Response, error) {
		return c.api.BGPApi.RequestBgpConfig(ctx, c.projectID).BgpConfigRequestInput(in).Execute()
	})
	if isAlreadyDone(err, alreadyEnabled...) {
		return nil
	}
	return err
}

// alreadyEnabled is the 422 for a project whose BGP is on (inferred).
var alreadyEnabled = [][]string{{"already enabled"}}

// alreadyHasSession is the 422 for a duplicate session (observed in
// cloud-provider-equinix-metal and cluster-api-provider-packet).
var alreadyHasSession = [][]string{{"already has session"}}

func (c *sdkClient) CreateBGPSession(ctx context.Context, deviceID string, req BGPSessionRequest) error {
	if err := requireID(OpCreateBGPSession, "device ID", deviceID); err != nil {
		return err
	}
	family := metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4
	if req.AddressFamily != "" {
		family = metalv1.BGPSessionInputAddressFamily(req.AddressFamily)
	}
	in := metalv1.BGPSessionInput{AddressFamily: &family, DefaultRoute: metalv1.PtrBool(req.DefaultRoute)}
	err := c.do(ctx, OpCreateBGPSession, func(ctx context.Context) (resp *http.Response, err error) {
		_, resp, err = c.api.DevicesApi.CreateBgpSession(ctx, deviceID).BGPSessionInput(in).Execute()
		return resp, err
	})
	if isAlreadyDone(err, alreadyHasSession...) {
		return nil
	}
	return err
}

func (c *sdkClient) ListBGPNeighbors(ctx context.Context, deviceID string) ([]BGPNeighbor, error) {
	if err := requireID(OpListBGPNeighbors, "device ID", deviceID); err != nil {
		return nil, err
	}
	var res *metalv1.BgpSessionNeighbors
	err := c.do(ctx, OpListBGPNeighbors, func(ctx context.Context) (resp *http.Response, err error) {
		res, resp, err = c.api.DevicesApi.GetBgpNeighborData(ctx, deviceID).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]BGPNeighbor, 0, len(res.GetBgpNeighbors()))
	for i := range res.GetBgpNeighbors() {
		out = append(out, fromBGPNeighbor(&res.BgpNeighbors[i]))
	}
	return out, nil
}

func (c *sdkClient) ListPlans(ctx context.Context) ([]Plan, error) {
	var list *metalv1.PlanList
	err := c.do(ctx, OpListPlans, func(ctx context.Context) (resp *http.Response, err error) {
		list, resp, err = c.api.PlansApi.FindPlans(ctx).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Plan, 0, len(list.GetPlans()))
	for i := range list.GetPlans() {
		out = append(out, fromPlan(&list.Plans[i]))
	}
	return out, nil
}
