package hardware

import (
	"strings"
	"testing"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

func TestWhenAPowerStateNeedsACall(t *testing.T) {
	for _, tc := range []struct {
		desired  equinixv1.PowerState
		observed string
		want     bool
	}{
		{equinixv1.PowerOn, "", false}, // a server is made on
		{equinixv1.PowerOn, "on", false},
		{equinixv1.PowerOn, "unknown", false},
		{equinixv1.PowerOn, "off", true},
		{equinixv1.PowerOn, "powering-off", true},
		{equinixv1.PowerOff, "", true},
		{equinixv1.PowerOff, "on", true},
		{equinixv1.PowerOff, "powering-off", true}, // the call finds it on its way and sends nothing
		{equinixv1.PowerOff, "off", false},
	} {
		assert.Equal(t, tc.want, needsPower(tc.desired, tc.observed), "%s while %q", tc.desired, tc.observed)
	}
}

func TestWhereAnActionTakesTheServer(t *testing.T) {
	assert.True(t, reached(hardwarev1.PowerActionOff, machine.PowerOff, false))
	assert.False(t, reached(hardwarev1.PowerActionOff, machine.PowerPoweringOff, true))
	assert.True(t, reached(hardwarev1.PowerActionOn, machine.PowerOn, false))
	assert.False(t, reached(hardwarev1.PowerActionReboot, machine.PowerOn, false), "a reboot not yet taken is not done because the server is on")
	assert.True(t, reached(hardwarev1.PowerActionReboot, machine.PowerOn, true))
	assert.True(t, underway(hardwarev1.PowerActionOff, machine.PowerPoweringOff))
	assert.True(t, underway(hardwarev1.PowerActionOn, machine.PowerPoweringOn))
	assert.False(t, underway(hardwarev1.PowerActionOn, machine.PowerPoweringOff))
	assert.False(t, underway(hardwarev1.PowerActionReboot, machine.PowerPoweringOn))
}

func TestForwardedEventsAreNamedByTheirID(t *testing.T) {
	a := eventName("pool-abcdefgh", "0b4c0e3a-1b7e-4c54-9f0a-8b1c6a7a3d11")
	assert.Equal(t, a, eventName("pool-abcdefgh", "0b4c0e3a-1b7e-4c54-9f0a-8b1c6a7a3d11"), "the same event, the same name, after any restart")
	assert.NotEqual(t, a, eventName("pool-abcdefgh", "another"))
	assert.True(t, strings.HasPrefix(a, "pool-abcdefgh.hw-"))

	long := strings.Repeat("é", 800)
	msg := message(machine.Event{Type: "instance.note", Message: long, Time: time.Now()})
	assert.LessOrEqual(t, len(msg), maxMessage)
	assert.True(t, strings.HasPrefix(msg, "instance.note: é"))
	assert.NotContains(t, msg, "\ufffd", "cut on a rune boundary")
}

func TestBackoffDoublesToItsCap(t *testing.T) {
	r := &run{s: &Steps{settings: StepSettings{PollInterval: 15 * time.Second}}}
	assert.Equal(t, 30*time.Second, r.backoff(1))
	assert.Equal(t, 60*time.Second, r.backoff(2))
	assert.Equal(t, maxRetryBackoff, r.backoff(20))
}

// liveNodes answers Get as the API server would; the cache is the run's node.
type liveNodes struct {
	corecontrollers.NodeController
	live *corev1.Node
	gets int
}

func (l *liveNodes) Get(name string, _ metav1.GetOptions) (*corev1.Node, error) {
	l.gets++
	if l.live == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	return l.live.DeepCopy(), nil
}

func maintenanceNode(status string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Annotations: map[string]string{}}}
	if status != "" {
		n.Annotations[harvester.AnnotationMaintainStatus] = status
	}
	return n
}

// A node taken out of maintenance mode a moment before a power request came
// in may still be in maintenance in the cache: the API server's word wins.
func TestPowerCommandWaitsForMaintenanceConfirmedLive(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cached, live *corev1.Node
		want         bool
		gets         int
	}{
		{"in maintenance in both", maintenanceNode("completed"), maintenanceNode("completed"), true, 1},
		{"left maintenance, the cache lags", maintenanceNode("completed"), maintenanceNode(""), false, 1},
		{"gone from the API server", maintenanceNode("completed"), nil, false, 1},
		{"not in maintenance in the cache: no read", maintenanceNode(""), maintenanceNode("completed"), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := &liveNodes{live: tc.live}
			r := &run{s: &Steps{nodes: nodes}, node: tc.cached}
			ok, why, err := r.maintenanceConfirmed()
			assert.NoError(t, err)
			assert.Equal(t, tc.want, ok, why)
			assert.NotEmpty(t, why)
			assert.Equal(t, tc.gets, nodes.gets)
		})
	}
}
