package metal

import (
	"context"
	"net/http"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

var portIncludes = []string{"virtual_networks", "native_virtual_network"}

// 422 messages that mean the change is already in place. (observed)
// "already configured for Layer 2" (terraform-provider-equinix #143) and
// "already layer3" (terraform-provider-packet #224), "not assigned" for a VLAN
// that is not on the port; the spelling variants are (inferred).
var (
	alreadyLayer2 = [][]string{{"already", "layer 2"}, {"already", "layer2"}, {"already", "layer-2"}}
	alreadyLayer3 = [][]string{{"already", "layer 3"}, {"already", "layer3"}, {"already", "layer-3"}}
	notAssigned   = [][]string{{"not assigned"}}
	// (inferred) assigning a VLAN the port already carries.
	alreadyAssigned = [][]string{{"already assigned"}}
)

func (c *sdkClient) GetPort(ctx context.Context, id string) (*Port, error) {
	if err := requireID(OpGetPort, "port ID", id); err != nil {
		return nil, err
	}
	var p *metalv1.Port
	err := c.do(ctx, OpGetPort, func(ctx context.Context) (resp *http.Response, err error) {
		p, resp, err = c.api.PortsApi.FindPortById(ctx, id).Include(portIncludes).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := fromPort(p)
	return &out, nil
}

// portCall runs one port operation and returns the port as the API answered
// it. A conversion can answer before it changed the port, so callers compare
// the answer with what they asked for before relying on it.
func (c *sdkClient) portCall(ctx context.Context, op, id string, call func(context.Context) (*metalv1.Port, *http.Response, error)) (*Port, error) {
	if err := requireID(op, "port ID", id); err != nil {
		return nil, err
	}
	var answer *metalv1.Port
	err := c.do(ctx, op, func(ctx context.Context) (resp *http.Response, err error) {
		answer, resp, err = call(ctx)
		return resp, err
	})
	if err != nil || answer == nil {
		return nil, err
	}
	out := fromPort(answer)
	return &out, nil
}

// vlanCall runs a VLAN assignment, whose answer nobody reads: the API
// assigns or unassigns before it answers.
func (c *sdkClient) vlanCall(ctx context.Context, op, id string, call func(context.Context) (*metalv1.Port, *http.Response, error)) error {
	_, err := c.portCall(ctx, op, id, call)
	return err
}

func (c *sdkClient) BondPort(ctx context.Context, id string, bulk bool) (*Port, error) {
	return c.portCall(ctx, OpBondPort, id, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		return c.api.PortsApi.BondPort(ctx, id).BulkEnable(bulk).Execute()
	})
}

func (c *sdkClient) DisbondPort(ctx context.Context, id string, bulk bool) (*Port, error) {
	return c.portCall(ctx, OpDisbondPort, id, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		return c.api.PortsApi.DisbondPort(ctx, id).BulkDisable(bulk).Execute()
	})
}

func (c *sdkClient) ConvertLayer2(ctx context.Context, id string) (*Port, error) {
	answer, err := c.portCall(ctx, OpConvertLayer2, id, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		// The SDK insists on a body; the API takes an empty object.
		return c.api.PortsApi.ConvertLayer2(ctx, id).PortAssignInput(metalv1.PortAssignInput{}).Execute()
	})
	if isAlreadyDone(err, alreadyLayer2...) {
		return nil, nil
	}
	return answer, err
}

// layer3Addresses are what a port returning to layer 3 asks for: the same set
// a new device gets.
var layer3Addresses = []metalv1.PortConvertLayer3InputRequestIpsInner{
	{AddressFamily: metalv1.PtrInt32(4), Public: metalv1.PtrBool(true)},
	{AddressFamily: metalv1.PtrInt32(4), Public: metalv1.PtrBool(false)},
	{AddressFamily: metalv1.PtrInt32(6), Public: metalv1.PtrBool(true)},
}

func (c *sdkClient) ConvertLayer3(ctx context.Context, id string) (*Port, error) {
	answer, err := c.portCall(ctx, OpConvertLayer3, id, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		return c.api.PortsApi.ConvertLayer3(ctx, id).
			PortConvertLayer3Input(metalv1.PortConvertLayer3Input{RequestIps: layer3Addresses}).Execute()
	})
	if isAlreadyDone(err, alreadyLayer3...) {
		return nil, nil
	}
	return answer, err
}

func (c *sdkClient) AssignVLAN(ctx context.Context, portID, vnid string) error {
	if err := requireID(OpAssignVLAN, "VLAN", vnid); err != nil {
		return err
	}
	err := c.vlanCall(ctx, OpAssignVLAN, portID, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		return c.api.PortsApi.AssignPort(ctx, portID).PortAssignInput(metalv1.PortAssignInput{Vnid: &vnid}).Execute()
	})
	if isAlreadyDone(err, alreadyAssigned...) {
		return nil
	}
	return err
}

func (c *sdkClient) UnassignVLAN(ctx context.Context, portID, vnid string) error {
	if err := requireID(OpUnassignVLAN, "VLAN", vnid); err != nil {
		return err
	}
	err := c.vlanCall(ctx, OpUnassignVLAN, portID, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		return c.api.PortsApi.UnassignPort(ctx, portID).PortAssignInput(metalv1.PortAssignInput{Vnid: &vnid}).Execute()
	})
	if isAlreadyDone(err, notAssigned...) {
		return nil
	}
	return err
}

func (c *sdkClient) AssignNativeVLAN(ctx context.Context, portID, vnid string) error {
	if err := requireID(OpAssignNativeVLAN, "VLAN", vnid); err != nil {
		return err
	}
	return c.vlanCall(ctx, OpAssignNativeVLAN, portID, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		return c.api.PortsApi.AssignNativeVlan(ctx, portID).Vnid(vnid).Execute()
	})
}

func (c *sdkClient) RemoveNativeVLAN(ctx context.Context, portID string) error {
	return c.vlanCall(ctx, OpRemoveNativeVLAN, portID, func(ctx context.Context) (*metalv1.Port, *http.Response, error) {
		return c.api.PortsApi.DeleteNativeVlan(ctx, portID).Execute()
	})
}
