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
		in.Vxlan = metalv1.PtrInt32(int32(req.VXLAN)) //nolint:gosec // G115: a VXLAN ID is at most 3999
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
