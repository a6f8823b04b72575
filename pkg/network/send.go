package network

import (
	"context"
	"fmt"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Send makes the step's one Metal API call. Structural steps (bond,
// disbond, conversions) return the port as the API answered it, which
// AfterAnswer may take instead of reading the device back.
func (s Step) Send(ctx context.Context, client metal.PortClient) (*metal.Port, error) {
	switch s.Op {
	case OpAssign:
		return nil, client.AssignVLAN(ctx, s.PortID, s.VLANID)
	case OpUnassign:
		return nil, client.UnassignVLAN(ctx, s.PortID, s.VLANID)
	case OpBond:
		return client.BondPort(ctx, s.PortID, s.Bulk)
	case OpDisbond:
		return client.DisbondPort(ctx, s.PortID, s.Bulk)
	case OpToLayer2:
		return client.ConvertLayer2(ctx, s.PortID)
	case OpToLayer3:
		return client.ConvertLayer3(ctx, s.PortID)
	}
	return nil, fmt.Errorf("unknown port operation %q", s.Op)
}
