package metaldriver

import (
	"context"

	"github.com/harvester/harvester-equinix-addon/pkg/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// machine is one device, reached with its project's credentials.
type machine struct {
	d     *Driver
	creds metal.Credentials
	dev   Device
}

// Facts is what the Metal API says of the device's hardware: its plan
// (the model it sells, with the plan's CPUs, memory, drives and NICs from
// the plans API) and its termination time. The API names no manufacturer
// and no serial number, so those stay empty. It costs no call but the
// plans list's, shared and listed at most hourly.
func (m *machine) Facts(ctx context.Context) (hardware.Facts, error) {
	facts := hardware.Facts{Model: m.dev.Plan, Source: "Equinix Metal plan " + m.dev.Plan}
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
			facts.Drives = append(facts.Drives, hardware.Drive{Count: d.Count, Size: d.Size, Type: d.Type, Category: d.Category})
		}
	}
	return facts, nil
}

func components(cs []metal.PlanComponent) []hardware.Component {
	out := make([]hardware.Component, 0, len(cs))
	for _, c := range cs {
		out = append(out, hardware.Component{Count: c.Count, Type: c.Type})
	}
	return out
}

// Events hands out the device's events kept from the project's last lists,
// after cursor. It costs no call: the driver's Run reads the project log
// and announces the devices with news through Options.Notify. Passing a
// cursor also tells the driver that everything before it has been handed
// on.
func (m *machine) Events(_ context.Context, raw string) (hardware.EventBatch, error) {
	ps := m.d.project(m.creds.ProjectID)
	c := parseCursor(raw)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	dl := ps.deviceLocked(m.dev.ID)
	dl.ackLocked(c)
	return hardware.EventBatch{Events: dl.afterLocked(c)}, nil
}

// PowerState reads the device (one call).
func (m *machine) PowerState(ctx context.Context) (hardware.PowerState, error) {
	client, err := m.d.opts.Provider.Client(m.creds)
	if err != nil {
		return hardware.PowerUnknown, fromError("PowerState", err)
	}
	dev, err := client.GetDevice(ctx, m.dev.ID)
	if err != nil {
		return hardware.PowerUnknown, fromError("PowerState", err)
	}
	return powerState(dev.State), nil
}

// Power sends one device action.
func (m *machine) Power(ctx context.Context, action hardware.PowerAction) error {
	client, err := m.d.opts.Provider.Client(m.creds)
	if err != nil {
		return fromError("Power", err)
	}
	switch action {
	case hardware.ActionOn:
		err = client.PowerOn(ctx, m.dev.ID)
	case hardware.ActionOff:
		err = client.PowerOff(ctx, m.dev.ID)
	case hardware.ActionReboot:
		err = client.Reboot(ctx, m.dev.ID)
	default:
		return &hardware.Error{Op: "Power", Class: hardware.ClassRefused, Message: "unknown power action " + string(action)}
	}
	return fromError("Power", err)
}

// known returns a project's state without creating it.
func (d *Driver) known(id string) *projectState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.projects[id]
}
