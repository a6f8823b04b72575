package chaos

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// String is the one-line plan printed at the start of a run.
func (pl plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d install=%s foreign-vxlan=%d final-rollouts=%v |", pl.Seed, pl.InstallTime, pl.ForeignVXLAN, pl.Final)
	for i, s := range pl.Steps {
		fmt.Fprintf(&b, " %d:+%.2fs %s |", i, s.Delay.Seconds(), s)
	}
	return strings.TrimSuffix(b.String(), " |")
}

func (s step) String() string {
	switch s.Kind {
	case actCreatePool, actRetype:
		project := "A"
		if s.Pool.ProjectB {
			project = "B"
		}
		return fmt.Sprintf("%s %s(n=%d %s %v %s %s rem=%v att=%d surge=%s unav=%s project=%s)", s.Kind, s.Pool.Name, s.Pool.Count, s.Pool.Network,
			s.Pool.VLANs, s.Pool.Metro, s.Pool.BootMode, s.Pool.Remediate, s.Pool.MaxAttempts, s.Pool.Surge, s.Pool.Unavailable, project)
	case actScalePool:
		return fmt.Sprintf("scale %s=%d", s.Pool.Name, s.Pool.Count)
	case actRollout:
		return fmt.Sprintf("rollout %s plan=%s surge=%s unav=%s", s.Pool.Name, s.Pool.Plan, s.Pool.Surge, s.Pool.Unavailable)
	case actEditVLANs:
		return fmt.Sprintf("vlans %s=%v", s.Pool.Name, s.Pool.VLANs)
	case actDeletePool:
		return "delete " + s.Pool.Name
	case actKillOn:
		return fmt.Sprintf("kill-on %s down=%d", s.Trigger, s.Down)
	case actAPIServer:
		if s.Graceful {
			return "apiserver-restart graceful"
		}
		return "apiserver-crash"
	case actFault:
		return "fault " + s.Fault.String()
	case actUnfault:
		return fmt.Sprintf("unfault@%d", s.FaultOf)
	case actNotReady:
		return fmt.Sprintf("notready #%d ago=%s", s.Pick, s.Ago)
	case actDeleteDevice, actReady, actServerDown, actDeleteNode, actMoveVIP, actPower, actReboot, actMaintain, actUnmaintain, actDeviceEvent:
		return fmt.Sprintf("%s #%d", s.Kind, s.Pick)
	}
	return string(s.Kind)
}

func (f faultSpec) String() string {
	kind := string(f.Kind)
	if f.AfterStore {
		kind += "-after-store"
	}
	switch {
	case f.Status != 0:
		kind += "-" + strconv.Itoa(f.Status)
	case f.Latency != 0:
		kind += "-" + f.Latency.String()
	}
	ops := "all"
	if f.Ops != nil {
		ops = strings.Join(f.Ops, ",")
	}
	return fmt.Sprintf("%s p=%.2f ops=%s", kind, f.Probability, ops)
}

// A seed always yields the same plan, and every plan starts by creating a
// pool, restarts a controller it killed and ends every fault it injected or
// leaves that to the quiesce.
func TestPlanIsReproducible(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		a, b := newPlan(seed), newPlan(seed)
		require.Equal(t, a.String(), b.String(), "seed %d", seed)
		require.NotEmpty(t, a.Steps)
		assert.Equal(t, actCreatePool, a.Steps[0].Kind, "seed %d", seed)
		for i, s := range a.Steps {
			if s.Kind == actUnfault {
				assert.Equal(t, actFault, a.Steps[s.FaultOf].Kind, "seed %d step %d", seed, i)
			}
			if s.Kind == actCreatePool || s.Kind == actRetype || s.Kind == actRollout {
				assert.NoError(t, validTemplate(s.Pool), "seed %d step %d", seed, i)
			}
		}
	}
	assert.NotEqual(t, newPlan(1).String(), newPlan(2).String())
}

// validTemplate restates the CRD rules the planner must respect, so a plan
// the apiserver would refuse fails here, without a cluster.
func validTemplate(p poolSpec) error {
	if p.Network == equinixv1.NetworkTypeLayer3 && len(p.VLANs) > 0 {
		return fmt.Errorf("layer3 with VLANs")
	}
	if p.Network != equinixv1.NetworkTypeLayer3 && len(p.VLANs) == 0 {
		return fmt.Errorf("%s without VLANs", p.Network)
	}
	if p.BootMode == equinixv1.BootModeSingleBoot && strings.HasPrefix(p.Network, "layer2") {
		return fmt.Errorf("single-boot with %s", p.Network)
	}
	if p.Count < 0 || p.Count > 3 {
		return fmt.Errorf("count %d", p.Count)
	}
	if strings.TrimSuffix(p.Surge, "%") == "0" && strings.TrimSuffix(p.Unavailable, "%") == "0" {
		return fmt.Errorf("maxSurge and maxUnavailable both 0")
	}
	if p.Surge == "" || p.Unavailable == "" {
		return fmt.Errorf("no rollout bounds")
	}
	return nil
}

// Every owned plan mixes Redfish and IPMI servers, and makes IPMI the free
// server of generation "b" that any pool claims first.
func TestOwnedPlanMixesIPMIServers(t *testing.T) {
	kinds := map[int]bool{}
	for seed := int64(0); seed < 200; seed++ {
		p := newOwnedPlan(seed)
		require.Equal(t, p.String(), newOwnedPlan(seed).String(), "seed %d", seed)
		assert.True(t, len(p.IPMI) >= 1 && len(p.IPMI) <= 3, "seed %d: IPMI servers %v", seed, p.IPMI)
		b := firstFreeB(p.Foreign)
		assert.Contains(t, p.IPMI, b, "seed %d", seed)
		assert.True(t, b >= p.Foreign && b%2 == 1, "seed %d: server %d is foreign or of generation a", seed, b)
		for _, i := range p.IPMI {
			assert.True(t, i >= 0 && i < ownedServers, "seed %d: %v", seed, p.IPMI)
			kinds[i] = true
		}
	}
	assert.Len(t, kinds, ownedServers, "every server is IPMI in some seed")
}

// Every owned plan breaks the installs of two or three servers a pool may
// claim, so that the quarantine is exercised, and never of a foreign
// server, of the IPMI server every run's pools drive first, or of the one
// a person set aside.
func TestOwnedPlanBreaksSomeInstalls(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		p := newOwnedPlan(seed)
		assert.True(t, len(p.Broken) >= 2 && len(p.Broken) <= 3, "seed %d: broken %v", seed, p.Broken)
		for _, i := range p.Broken {
			assert.True(t, i >= p.Foreign && i < ownedServers, "seed %d: server %d is foreign or none", seed, i)
			assert.NotEqual(t, firstFreeB(p.Foreign), i, "seed %d", seed)
			assert.NotEqual(t, p.SetAside, i, "seed %d", seed)
		}
		assert.True(t, p.SetAside >= p.Foreign && p.SetAside != firstFreeB(p.Foreign), "seed %d: set aside %d", seed, p.SetAside)
	}
}
