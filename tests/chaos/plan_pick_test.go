package chaos

import (
	"time"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

type weighted struct {
	kind   actionKind
	weight int
}

func (p *planner) pick(s *step, i int) {
	var existing, missing []*poolState
	for _, ps := range p.pools {
		if ps.created {
			existing = append(existing, ps)
		} else {
			missing = append(missing, ps)
		}
	}
	options := []weighted{{actFault, 4}, {actDeleteDevice, 2}, {actNotReady, 2}, {actReady, 1}, {actServerDown, 1}, {actDeleteNode, 1}, {actMoveVIP, 3},
		{actPower, 3}, {actReboot, 1}, {actMaintain, 3}, {actUnmaintain, 1}, {actDeviceEvent, 1}}
	options = append(options, weighted{actKillOn, 3})
	if !p.down {
		options = append(options, weighted{actKill, 2})
	}
	if p.apiRestart < 2 {
		options = append(options, weighted{actAPIServer, 1})
	}
	if p.switchedUntil == 0 {
		options = append(options, weighted{actSwitchProject, 1})
	}
	if len(missing) > 0 {
		options = append(options, weighted{actCreatePool, 3})
	}
	if len(existing) > 0 {
		options = append(options, weighted{actScalePool, 4}, weighted{actEditVLANs, 1}, weighted{actRetype, 1}, weighted{actDeletePool, 1}, weighted{actRollout, 2})
	}
	total := 0
	for _, o := range options {
		total += o.weight
	}
	r := p.rng.Intn(total)
	for _, o := range options {
		if r < o.weight {
			s.Kind = o.kind
			break
		}
		r -= o.weight
	}
	switch s.Kind {
	case actCreatePool:
		p.createPool(s, missing[p.rng.Intn(len(missing))])
	case actScalePool:
		ps := existing[p.rng.Intn(len(existing))]
		ps.spec.Count = p.rng.Intn(4)
		s.Pool = ps.spec
	case actEditVLANs:
		ps := existing[p.rng.Intn(len(existing))]
		if ps.spec.Network != equinixv1.NetworkTypeLayer3 {
			ps.spec.VLANs = p.vlans()
		}
		s.Pool = ps.spec
	case actRetype:
		ps := existing[p.rng.Intn(len(existing))]
		p.template(&ps.spec)
		p.roll.retype(&ps.spec)
		s.Pool = ps.spec
	case actDeletePool:
		ps := existing[p.rng.Intn(len(existing))]
		ps.created = false
		s.Pool = ps.spec
	case actRollout:
		s.Pool = p.roll.rollout(&existing[p.rng.Intn(len(existing))].spec)
	case actKill:
		p.down = true
	case actKillOn:
		// Armed until it fires; the controller starts again Down steps later.
		s.Trigger = killTriggers[p.rng.Intn(len(killTriggers))]
		s.Down = 1 + p.rng.Intn(3)
	case actFault:
		s.Fault = p.fault()
		p.openFaults[i] = i + 1 + p.rng.Intn(6)
	case actAPIServer:
		p.apiRestart++
		s.Graceful = p.rng.Intn(5) == 0
	case actSwitchProject:
		p.switchedUntil = i + 1 + p.rng.Intn(6)
	case actNotReady:
		s.Pick = p.rng.Intn(1 << 20)
		if p.rng.Intn(2) == 0 {
			s.Ago = 10 * time.Minute
		}
	default: // device and node picks
		s.Pick = p.rng.Intn(1 << 20)
	}
}
