package metaldriver

import (
	"context"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// deviceMachine is one device, reached with its project's credentials.
type deviceMachine struct {
	d     *Driver
	creds metal.Credentials
	dev   Device
}

// Facts is what the Metal API says of the device's hardware: its plan
// (the model it sells, with the plan's CPUs, memory, drives and NICs from
// the plans API) and its termination time. The API names no manufacturer
// and no serial number, so those stay empty. It costs no call but the
// plans list's, shared and listed at most hourly.
func (m *deviceMachine) Facts(ctx context.Context) (machine.Facts, error) {
	facts := machine.Facts{Model: m.dev.Plan, Source: "Equinix Metal plan " + m.dev.Plan}
	if ps := m.d.known(m.creds.ProjectID); ps != nil {
		ps.mu.Lock()
		facts.TerminationTime = ps.terminations[m.dev.ID]
		ps.mu.Unlock()
	}
	if m.dev.Plan == "" {
		return facts, nil
	}
	client, err := m.d.opts.Provider.Client(m.creds)
	if err != nil {
		return facts, fromError("Facts", err)
	}
	plan, ok, err := m.d.opts.Plans.Plan(ctx, client, m.dev.Plan)
	if err != nil {
		return facts, fromError("Facts", err)
	}
	if ok {
		facts.CPUs = components(plan.CPUs)
		facts.Memory = plan.Memory
		facts.NICs = components(plan.NICs)
		for _, d := range plan.Drives {
			facts.Drives = append(facts.Drives, machine.Drive{Count: d.Count, Size: d.Size, Type: d.Type, Category: d.Category})
		}
	}
	return facts, nil
}

func components(cs []metal.PlanComponent) []machine.Component {
	out := make([]machine.Component, 0, len(cs))
	for _, c := range cs {
		out = append(out, machine.Component{Count: c.Count, Type: c.Type})
	}
	return out
}

// Events hands out the device's events kept from the project's last lists,
// after cursor. It costs no call: the driver's Run reads the project log
// and announces the devices with news through Options.Notify. Passing a
// cursor also tells the driver that everything before it has been
// forwarded.
func (m *deviceMachine) Events(_ context.Context, raw string) (machine.EventBatch, error) {
	ps := m.d.project(m.creds.ProjectID)
	c := parseCursor(raw)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	dl := ps.deviceLocked(m.dev.ID)
	dl.ackLocked(c)
	return machine.EventBatch{Events: dl.afterLocked(c)}, nil
}

// PowerState reads the device (one call).
func (m *deviceMachine) PowerState(ctx context.Context) (machine.PowerState, error) {
	client, err := m.d.opts.Provider.Client(m.creds)
	if err != nil {
		return machine.PowerUnknown, fromError("PowerState", err)
	}
	dev, err := client.GetDevice(ctx, m.dev.ID)
	if err != nil {
		return machine.PowerUnknown, fromError("PowerState", err)
	}
	return powerState(dev.State), nil
}

// Power sends one device action.
func (m *deviceMachine) Power(ctx context.Context, action machine.PowerAction) error {
	client, err := m.d.opts.Provider.Client(m.creds)
	if err != nil {
		return fromError("Power", err)
	}
	switch action {
	case machine.ActionOn:
		err = client.PowerOn(ctx, m.dev.ID)
	case machine.ActionOff:
		err = client.PowerOff(ctx, m.dev.ID)
	case machine.ActionReboot:
		err = client.Reboot(ctx, m.dev.ID)
	default:
		return &failure.Error{Seam: machine.Seam, Op: "Power", Class: failure.Refused, Message: "unknown power action " + string(action)}
	}
	return fromError("Power", err)
}

// known returns a project's state without creating it.
func (d *Driver) known(id string) *projectState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.projects[id]
}
