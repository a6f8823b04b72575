package instancepool

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

func TestRolloutBounds(t *testing.T) {
	num, pct := intstr.FromInt32, intstr.FromString
	cases := []struct {
		name                 string
		count                int32
		surge, unavailable   *intstr.IntOrString
		wantSurge, wantUnavl int
	}{
		{name: "unset: today's rollout", count: 3, wantSurge: 1, wantUnavl: 0},
		{name: "numbers", count: 10, surge: ptr(num(3)), unavailable: ptr(num(2)), wantSurge: 3, wantUnavl: 2},
		{name: "surge rounds up, unavailable down", count: 10, surge: ptr(pct("25%")), unavailable: ptr(pct("25%")), wantSurge: 3, wantUnavl: 2},
		{name: "in place", count: 3, surge: ptr(num(0)), unavailable: ptr(num(1)), wantSurge: 0, wantUnavl: 1},
		{name: "percentages of a small pool that come to 0: one may be unavailable", count: 3, surge: ptr(pct("0%")), unavailable: ptr(pct("10%")), wantSurge: 0, wantUnavl: 1},
		{name: "unavailable never above count", count: 2, surge: ptr(num(0)), unavailable: ptr(num(5)), wantSurge: 0, wantUnavl: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &equinixv1.InstancePool{Spec: equinixv1.InstancePoolSpec{Count: tc.count, Rollout: equinixv1.RolloutStrategy{MaxSurge: tc.surge, MaxUnavailable: tc.unavailable}}}
			s, u := rolloutBounds(p)
			assert.Equal(t, tc.wantSurge, s, "surge")
			assert.Equal(t, tc.wantUnavl, u, "unavailable")
		})
	}
}

func ptr[T any](v T) *T { return &v }

func managed(i *equinixv1.Instance) bool {
	return i.DeletionTimestamp == nil && i.Status.Status == equinixv1.PhaseManaged
}
func noHold(*equinixv1.Instance) string { return "" }

func TestPlanRolloutSteps(t *testing.T) {
	old := func(name string) *equinixv1.Instance { return inst(name, time.Hour).build() }
	fresh := func(name string) *equinixv1.Instance { return inst(name, time.Minute).build() }
	installing := func(name string) *equinixv1.Instance { return inst(name, time.Minute).neverJoined().build() }
	cases := []struct {
		name       string
		f          fleet
		wantCreate int
		wantRemove []string
	}{
		{name: "surge 1: the new server first", f: fleet{count: 3, surge: 1, outdated: []*equinixv1.Instance{old("a"), old("b"), old("c")}},
			wantCreate: 1},
		{name: "surge 1: an old one goes once the new one is available",
			f:          fleet{count: 3, surge: 1, outdated: []*equinixv1.Instance{old("a"), old("b"), old("c")}, current: []*equinixv1.Instance{fresh("n")}},
			wantCreate: 0, wantRemove: []string{"a"}},
		{name: "surge 1: nothing while the new one installs",
			f: fleet{count: 3, surge: 1, outdated: []*equinixv1.Instance{old("a"), old("b"), old("c")}, current: []*equinixv1.Instance{installing("n")}}},
		{name: "surge 1: the next new one waits for the removed device",
			f: fleet{count: 3, surge: 1, outdated: []*equinixv1.Instance{old("b"), old("c")}, current: []*equinixv1.Instance{fresh("n")}, removing: 1}},
		{name: "in place: an old one goes first",
			f:          fleet{count: 3, surge: 0, unavailable: 1, outdated: []*equinixv1.Instance{old("a"), old("b"), old("c")}},
			wantRemove: []string{"a"}},
		{name: "in place: its successor once its device is gone",
			f:          fleet{count: 3, surge: 0, unavailable: 1, outdated: []*equinixv1.Instance{old("b"), old("c")}},
			wantCreate: 1},
		{name: "in place: not before",
			f: fleet{count: 3, surge: 0, unavailable: 1, outdated: []*equinixv1.Instance{old("b"), old("c")}, removing: 1}},
		{name: "large pool: a quarter at a time",
			f:          fleet{count: 8, surge: 2, unavailable: 2, outdated: []*equinixv1.Instance{old("a"), old("b"), old("c"), old("d"), old("e"), old("f"), old("g"), old("h")}},
			wantCreate: 2, wantRemove: []string{"a", "b"}},
		{name: "an old server that is not available goes first and costs nothing",
			f: fleet{count: 3, surge: 1, outdated: []*equinixv1.Instance{old("a"), inst("sick", time.Hour).unhealthy().build(), old("c")},
				current: []*equinixv1.Instance{fresh("n")}},
			wantRemove: []string{"sick"}},
		{name: "count lowered below the old servers: one old one goes, then the new one comes",
			f:          fleet{count: 1, surge: 1, outdated: []*equinixv1.Instance{old("a"), old("b")}},
			wantRemove: []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.available, tc.f.held = managed, noHold
			step := planRollout(tc.f)
			assert.Equal(t, tc.wantCreate, step.create, "create")
			got := names(step.remove)
			if len(tc.wantRemove) == 0 {
				assert.Empty(t, got, "remove")
			} else {
				assert.ElementsMatch(t, tc.wantRemove, got, "remove")
			}
		})
	}
}

// A guard that holds one old server lets the rollout take another.
func TestPlanRolloutSkipsHeldServers(t *testing.T) {
	f := fleet{count: 2, surge: 1, outdated: []*equinixv1.Instance{inst("mgr", time.Minute).build(), inst("worker", time.Hour).build()},
		current: []*equinixv1.Instance{inst("n", time.Second).build()}, available: managed,
		held: func(i *equinixv1.Instance) string {
			if i.Name == "mgr" {
				return "mgr is a management node the quorum needs"
			}
			return ""
		}}
	step := planRollout(f)
	assert.Equal(t, []string{"worker"}, names(step.remove))
	assert.Equal(t, []string{"mgr is a management node the quorum needs"}, step.held)
}

// Rollouts played to the end in a model where new servers take some passes
// to become available and removed ones some passes to vanish: the pool
// never holds more than count + maxSurge servers, never has fewer than
// count - maxUnavailable available, and every rollout ends with count
// servers of the new template.
func TestPlanRolloutKeepsItsBounds(t *testing.T) {
	for count := 1; count <= 7; count++ {
		for surge := 0; surge <= 3; surge++ {
			for unavailable := 0; unavailable <= min(count, 3); unavailable++ {
				if surge == 0 && unavailable == 0 {
					continue
				}
				for _, delays := range [][2]int{{1, 1}, {3, 1}, {1, 4}, {0, 0}} {
					name := fmt.Sprintf("count=%d surge=%d unavailable=%d install=%d removal=%d", count, surge, unavailable, delays[0], delays[1])
					t.Run(name, func(t *testing.T) { playRollout(t, count, surge, unavailable, delays[0], delays[1]) })
				}
			}
		}
	}
}

type modelServer struct {
	inst  *equinixv1.Instance
	isNew bool
	// left is how many passes until it is available (new) or gone (removed).
	left int
}

func playRollout(t *testing.T, count, surge, unavailable, install, removal int) {
	var servers []*modelServer
	for i := 0; i < count; i++ {
		servers = append(servers, &modelServer{inst: inst(fmt.Sprintf("old-%d", i), time.Duration(i+1)*time.Hour).build()})
	}
	seq := 0
	for pass := 0; pass < 200; pass++ {
		f := fleet{count: count, surge: surge, unavailable: unavailable, available: managed, held: noHold}
		for _, s := range servers {
			switch {
			case s.inst.DeletionTimestamp != nil:
				f.removing++
			case s.isNew:
				f.current = append(f.current, s.inst)
			default:
				f.outdated = append(f.outdated, s.inst)
			}
		}
		if len(f.outdated) == 0 && f.removing == 0 && len(f.current) == count && countAvailable(f.current, managed) == count {
			return
		}
		step := planRollout(f)
		for _, r := range step.remove {
			for _, s := range servers {
				if s.inst == r {
					now := metav1.Now()
					s.inst.DeletionTimestamp, s.left = &now, removal
				}
			}
		}
		for i := 0; i < step.create; i++ {
			seq++
			b := inst(fmt.Sprintf("new-%d", seq), 0).neverJoined()
			servers = append(servers, &modelServer{inst: b.build(), isNew: true, left: install})
		}
		available := 0
		for _, s := range servers {
			if managed(s.inst) {
				available++
			}
		}
		require.LessOrEqual(t, len(servers), count+surge, "pass %d: more servers than count + maxSurge", pass)
		require.GreaterOrEqual(t, available, count-unavailable, "pass %d: fewer available than count - maxUnavailable", pass)
		// Time passes: installs finish, devices go.
		kept := servers[:0]
		for _, s := range servers {
			switch {
			case s.inst.DeletionTimestamp != nil && s.left <= 0:
				continue
			case s.inst.DeletionTimestamp != nil:
				s.left--
			case s.isNew && s.inst.Status.Status != equinixv1.PhaseManaged && s.left <= 0:
				s.inst.Status.Status = equinixv1.PhaseManaged
			case s.isNew && s.inst.Status.Status != equinixv1.PhaseManaged:
				s.left--
			}
			kept = append(kept, s)
		}
		servers = kept
	}
	t.Fatalf("the rollout did not finish in 200 passes")
}
