package lifecycle

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// ledger records, from the simulator's notifications, every device stored
// (by the Instance UID in its tags) and every reinstall (by device). The
// request log has neither bodies nor tags; notifications have both.
type ledger struct {
	mu         sync.Mutex
	created    map[string][]string // Instance UID -> device IDs stored for it
	reinstalls map[string]int      // device ID -> reinstalls started
	failed     map[string]bool     // device IDs that ended failed
}

func newLedger(t *testing.T, env *framework.Env) *ledger {
	l := &ledger{created: map[string][]string{}, reinstalls: map[string]int{}, failed: map[string]bool{}}
	t.Cleanup(env.Sim.Subscribe(l.observe))
	return l
}

func (l *ledger) observe(n metalsim.Notification) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case n.Type == metalsim.DeviceCreated:
		uid, _ := equinixv1.TagValue(n.Tags, equinixv1.TagInstance)
		l.created[uid] = append(l.created[uid], n.DeviceID)
	case n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_REINSTALLING:
		l.reinstalls[n.DeviceID]++
	case n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_FAILED:
		l.failed[n.DeviceID] = true
	}
}

func (l *ledger) devicesOf(uid string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.created[uid]...)
}

func (l *ledger) createdCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ids := range l.created {
		n += len(ids)
	}
	return n
}

func (l *ledger) failedDevices() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for id := range l.failed {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// assertOneDevicePerInstance is the invariant of the restart tests: every
// Instance that ever asked for a device got exactly one (one stored create,
// one 201 from createDevice), that device is the one it records, the project
// holds nothing else, and each device was reinstalled exactly once.
func (l *ledger) assertOneDevicePerInstance(t *testing.T, env *framework.Env, insts []equinixv1.Instance) {
	t.Helper()
	l.mu.Lock()
	created := map[string][]string{}
	for uid, ids := range l.created {
		created[uid] = append([]string(nil), ids...)
	}
	reinstalls := map[string]int{}
	for id, n := range l.reinstalls {
		reinstalls[id] = n
	}
	l.mu.Unlock()

	assert.Len(t, created, len(insts), "devices were created for Instances other than the pool's")
	for _, inst := range insts {
		ids := created[string(inst.UID)]
		if assert.Len(t, ids, 1, "instance %s: devices created %v", inst.Name, ids) {
			assert.Equal(t, ids[0], inst.Status.InstanceID, "instance %s records another device", inst.Name)
			assert.Equal(t, 1, reinstalls[ids[0]], "instance %s: reinstalls of device %s", inst.Name, ids[0])
		}
	}
	var ok201 int
	for _, r := range env.Sim.RequestsFor(metalsim.OpCreateDevice) {
		if r.Status == 201 {
			ok201++
		}
	}
	assert.Equal(t, len(insts), ok201, "createDevice answered 201 more often than there are Instances")
	devs := env.Sim.Devices(framework.ProjectID)
	assert.Len(t, devs, len(insts), "devices in the project")
	for _, d := range devs {
		uid, _ := equinixv1.TagValue(d.Tags, equinixv1.TagInstance)
		assert.Len(t, created[uid], 1, "device %s (tag %s) belongs to no single Instance", d.GetId(), uid)
	}
}

// instanceLog keeps every version of every Instance the API server showed,
// through a watch that survives its own timeouts, so a test can see states
// that pass quickly (a failed Instance the pool replaces at once) and act on
// the first sight of one.
type instanceLog struct {
	mu       sync.Mutex
	versions []equinixv1.Instance
	waiters  []*instanceWaiter
}

type instanceWaiter struct {
	pred func(watch.EventType, *equinixv1.Instance) bool
	fn   func(*equinixv1.Instance)
	done chan struct{}
}

func watchInstances(t *testing.T, env *framework.Env) *instanceLog {
	t.Helper()
	api := env.Client.EquinixV1().Instances()
	list, err := api.List(env.Ctx, metav1.ListOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(env.Ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.Watch(ctx, o)
		},
	})
	require.NoError(t, err)
	l := &instanceLog{}
	go func() {
		for ev := range rw.ResultChan() {
			if inst, ok := ev.Object.(*equinixv1.Instance); ok {
				l.add(ev.Type, inst)
			}
		}
	}()
	t.Cleanup(func() {
		rw.Stop()
		cancel()
	})
	return l
}

func (l *instanceLog) add(typ watch.EventType, inst *equinixv1.Instance) {
	l.mu.Lock()
	l.versions = append(l.versions, *inst.DeepCopy())
	var due []*instanceWaiter
	rest := l.waiters[:0]
	for _, w := range l.waiters {
		if w.pred(typ, inst) {
			due = append(due, w)
		} else {
			rest = append(rest, w)
		}
	}
	l.waiters = rest
	l.mu.Unlock()
	for _, w := range due {
		w.fn(inst)
		close(w.done)
	}
}

// on runs fn, in the watch's goroutine, on the first event matching pred
// from now on; the returned channel closes after fn ran.
func (l *instanceLog) on(pred func(watch.EventType, *equinixv1.Instance) bool, fn func(*equinixv1.Instance)) <-chan struct{} {
	w := &instanceWaiter{pred: pred, fn: fn, done: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiters = append(l.waiters, w)
	return w.done
}

// seen returns the versions matching pred, oldest first.
func (l *instanceLog) seen(pred func(*equinixv1.Instance) bool) []equinixv1.Instance {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []equinixv1.Instance
	for i := range l.versions {
		if pred(&l.versions[i]) {
			out = append(out, l.versions[i])
		}
	}
	return out
}

// waitClosed fails the test if ch does not close within timeout.
func waitClosed(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

func hasCondition(i *equinixv1.Instance, condType string, status metav1.ConditionStatus, reason string) bool {
	c := conditions.Get(i.Status.Conditions, condType)
	return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
}

func poolCondition(env *framework.Env, pool, condType string) *metav1.Condition {
	p := env.Pool(pool)
	if p == nil {
		return nil
	}
	return conditions.Get(p.Status.Conditions, condType)
}

// event returns the first Event about name with the reason, if any.
func event(env *framework.Env, name, reason string) *corev1.Event {
	for _, ev := range env.Events(name) {
		if ev.Reason == reason {
			return &ev
		}
	}
	return nil
}

// assertNoWarnings checks that the Instances recorded only Normal Events: a
// crash or a lost answer the chain recovers from is nothing to warn about.
func assertNoWarnings(t *testing.T, env *framework.Env, insts []equinixv1.Instance) {
	t.Helper()
	for _, i := range insts {
		for _, ev := range env.Events(i.Name) {
			assert.NotEqual(t, corev1.EventTypeWarning, ev.Type, "instance %s: Warning %s: %s", i.Name, ev.Reason, ev.Message)
		}
	}
}
