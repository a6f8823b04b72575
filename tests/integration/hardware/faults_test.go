package hardware

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// powerWorld is a joined server in maintenance mode, ready for power
// requests, with the counts that prove one call per request.
type powerWorld struct {
	t    *testing.T
	env  *framework.Env
	inst equinixv1.Instance
	dev  string
}

func newPowerWorld(t *testing.T, env *framework.Env, name string) *powerWorld {
	_, inst := readyServer(t, env, name, nil)
	annotateNode(t, env, inst.Name, harvester.AnnotationDrainRequested, "true")
	env.Eventually(func() bool {
		ok, _ := harvester.PowerActionsAllowed(node(t, env, inst.Name))
		return ok
	}, time.Minute, "the node did not enter maintenance mode")
	return &powerWorld{t: t, env: env, inst: inst, dev: inst.Status.InstanceID}
}

func (w *powerWorld) calls() int { return len(w.env.Sim.RequestsFor(metalsim.OpPerformAction)) }

// request asks for spec and waits for the request to end as want.
func (w *powerWorld) request(spec map[string]any, action hardwarev1.PowerAction, want hardwarev1.PowerActionResult) *hardwarev1.PowerActionStatus {
	w.t.Helper()
	patchSpec(w.t, w.env, w.inst.Name, spec)
	var la *hardwarev1.PowerActionStatus
	w.env.Eventually(func() bool {
		la = instance(w.t, w.env, w.inst.Name).Status.LastPowerAction
		return la != nil && la.Action == action && la.Result == want
	}, 2*time.Minute, "the %s did not end %s", action, want)
	return la
}

func (w *powerWorld) fault(f metalsim.Fault) {
	f.Operations = []string{metalsim.OpPerformAction}
	f.Count = 1
	w.env.Sim.InjectFault(f)
}

// Exactly one power action is carried out per request whatever the API
// does to the call: a 429 is retried (nothing was done), a 5xx or a lost
// answer after the action was stored is never sent again, and a call lost
// before it reached the server is sent again only once the server is seen
// not to have changed when it no longer could. A reboot whose answer is lost
// leaves no trace, so it is not sent again: the request fails and says so.
func TestOnePowerCallPerRequestUnderFaults(t *testing.T) {
	env := newEnv(t, framework.Options{})
	w := newPowerWorld(t, env, "faults")
	off, on := map[string]any{"powerState": "off"}, map[string]any{"powerState": "on"}

	before := w.calls()
	w.fault(metalsim.Fault{Kind: metalsim.FaultRateLimit, RetryAfter: time.Second})
	w.request(off, hardwarev1.PowerActionOff, hardwarev1.PowerResultSucceeded)
	assert.Equal(t, 2, w.calls()-before, "the 429, then the call")
	assert.Equal(t, 1, powerEvents(t, env, w.dev, metalsim.EventPowerOff))

	before = w.calls()
	w.fault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 500, AfterStore: true})
	w.request(on, hardwarev1.PowerActionOn, hardwarev1.PowerResultSucceeded)
	assert.Equal(t, 1, w.calls()-before, "a call answered 5xx after it was stored is not sent again")
	assert.Equal(t, 1, powerEvents(t, env, w.dev, metalsim.EventPowerOn))
	require.True(t, env.EventRecorded(w.inst.Name, equinixv1.ReasonPowerActionUnconfirmed))

	before = w.calls()
	w.fault(metalsim.Fault{Kind: metalsim.FaultDropConnection})
	la := w.request(off, hardwarev1.PowerActionOff, hardwarev1.PowerResultSucceeded)
	assert.Equal(t, 2, w.calls()-before, "lost before it landed: sent again once the server was seen unchanged")
	assert.EqualValues(t, 2, la.Attempts)
	assert.Equal(t, 2, powerEvents(t, env, w.dev, metalsim.EventPowerOff), "one power-off per request")

	before = w.calls()
	w.fault(metalsim.Fault{Kind: metalsim.FaultDropConnection, AfterStore: true})
	w.request(on, hardwarev1.PowerActionOn, hardwarev1.PowerResultSucceeded)
	assert.Equal(t, 1, w.calls()-before)
	assert.Equal(t, 2, powerEvents(t, env, w.dev, metalsim.EventPowerOn))

	before = w.calls()
	w.fault(metalsim.Fault{Kind: metalsim.FaultDropConnection})
	first := time.Now().UTC().Truncate(time.Second)
	la = w.request(map[string]any{"rebootRequestedAt": first.Format(time.RFC3339)}, hardwarev1.PowerActionReboot, hardwarev1.PowerResultFailed)
	assert.Contains(t, la.Message, "not sent again")
	assert.Equal(t, 1, w.calls()-before)
	assert.Zero(t, powerEvents(t, env, w.dev, metalsim.EventReboot))
	w.request(map[string]any{"rebootRequestedAt": first.Add(time.Second).Format(time.RFC3339)}, hardwarev1.PowerActionReboot, hardwarev1.PowerResultSucceeded)
	assert.Equal(t, 1, powerEvents(t, env, w.dev, metalsim.EventReboot))
	assert.Len(t, env.Instances("faults"), 1)
}

// Killing the real binary in the middle of a power request (right after it
// stored its intent, or inside the call before the answer) and starting it
// again carries the request through with exactly one power action.
func TestSIGKILLMidPowerActionSendsOneCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(w *powerWorld, kill func()) func()
	}{
		{name: "intent-stored", arm: func(w *powerWorld, kill func()) func() {
			watcher, err := w.env.Client.EquinixV1().Instances().Watch(w.env.Ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + w.inst.Name})
			require.NoError(w.t, err)
			go func() {
				for ev := range watcher.ResultChan() {
					if i, ok := ev.Object.(*equinixv1.Instance); ok && ev.Type == watch.Modified &&
						i.Status.LastPowerAction != nil && i.Status.LastPowerAction.Result == hardwarev1.PowerResultSending {
						kill()
						return
					}
				}
			}()
			return watcher.Stop
		}},
		{name: "answer-lost", arm: func(w *powerWorld, kill func()) func() {
			return w.env.Sim.Subscribe(func(n metalsim.Notification) {
				if n.DeviceID == w.dev && n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_POWERING_OFF {
					kill()
				}
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, framework.Options{NoController: true})
			addon := framework.StartAddon(t, env, framework.AddonOptions{ExtraArgs: fastArgs})
			w := newPowerWorld(t, env, "kill-"+tc.name)
			killed := make(chan struct{})
			var once sync.Once
			stop := tc.arm(w, func() { once.Do(func() { addon.Kill(); close(killed) }) })
			defer stop()
			patchSpec(t, env, w.inst.Name, map[string]any{"powerState": "off"})
			select {
			case <-killed:
			case <-time.After(time.Minute):
				t.Fatal("the kill point was never reached")
			}
			addon.Start()
			env.Eventually(func() bool {
				la := instance(t, env, w.inst.Name).Status.LastPowerAction
				return la != nil && la.Result == hardwarev1.PowerResultSucceeded
			}, 2*time.Minute, "the power-off did not complete after the restart")
			assert.Equal(t, 1, powerEvents(t, env, w.dev, metalsim.EventPowerOff))
			d, _ := env.Sim.Device(w.dev)
			assert.Equal(t, metalv1.DEVICESTATE_INACTIVE, d.GetState())
			assert.False(t, strings.Contains(addon.Log(), "panic"))
			addon.AssertNoSecretLeaks()
		})
	}
}
