package hardware

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// fakeMachine answers power reads and counts power commands; anything
// else the step must not call.
type fakeMachine struct {
	machine.Machine
	state    machine.PowerState
	powerErr error
	commands []machine.PowerAction
	// stored is the status stored when each command went out.
	stored  func() *hardwarev1.HardwareStatus
	atSend  []hardwarev1.PowerActionResult
	readErr error
	events  []machine.Event
}

func (m *fakeMachine) Events(context.Context, string) (machine.EventBatch, error) {
	return machine.EventBatch{Events: m.events}, nil
}

func (m *fakeMachine) PowerState(context.Context) (machine.PowerState, error) {
	return m.state, m.readErr
}

func (m *fakeMachine) Power(_ context.Context, a machine.PowerAction) error {
	m.commands = append(m.commands, a)
	if la := m.stored().LastPowerAction; la != nil {
		m.atSend = append(m.atSend, la.Result)
	}
	return m.powerErr
}

// requester is an Instance standing in for a target that asks for one
// operation at a time: its request, and what it was told.
type requester struct {
	ObjectPass[*equinixv1.Instance, equinixv1.InstanceStatus]
	asked    hardwarev1.PowerAction
	quiet    bool
	accepted []hardwarev1.PowerAction
	ended    []bool
}

func (q *requester) Hardware() *hardwarev1.HardwareStatus { return &q.Obj.Status.HardwareStatus }
func (q *requester) Joined() bool                         { return false }
func (q *requester) ForwardsEvents() bool                 { return !q.quiet }
func (q *requester) PowerRecheck(time.Duration) time.Duration {
	return 10 * time.Second
}
func (q *requester) PowerRequest() (hardwarev1.PowerAction, bool) {
	return q.asked, q.asked != "" && len(q.accepted) == 0
}
func (q *requester) PowerAccepted(a hardwarev1.PowerAction) { q.accepted = append(q.accepted, a) }
func (q *requester) PowerEnded(_ hardwarev1.PowerAction, ok bool) {
	q.ended = append(q.ended, ok)
}

// statusStore is the status endpoint: the stored object, its writes, and
// one conflict on demand.
type statusStore struct {
	stored   *equinixv1.Instance
	writes   int
	conflict int
}

func newRequestRun(t *testing.T, node *corev1.Node, m *fakeMachine, asked hardwarev1.PowerAction) (*run, *requester, *statusStore, *record.FakeRecorder) {
	t.Helper()
	s := &statusStore{stored: &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Generation: 3}}}
	events := record.NewFakeRecorder(20)
	kind := reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus]{
		Name:       "Inventory",
		Status:     func(i *equinixv1.Instance) *equinixv1.InstanceStatus { return &i.Status },
		Conditions: func(i *equinixv1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *equinixv1.Instance) (*equinixv1.Instance, error) {
			if s.writes > 0 && s.conflict > 0 {
				s.conflict--
				return nil, apierrors.NewConflict(schema.GroupResource{Resource: "inventories"}, i.Name, nil)
			}
			s.writes++
			s.stored = i.DeepCopy()
			return i.DeepCopy(), nil
		},
		Get:          func(string) (*equinixv1.Instance, error) { return s.stored.DeepCopy(), nil },
		EnqueueAfter: func(string, time.Duration) {},
		Recorder:     events,
	}
	q := &requester{ObjectPass: ObjectPass[*equinixv1.Instance, equinixv1.InstanceStatus]{Pass: reconcile.NewPass(kind, s.stored), Kind: "Inventory"}, asked: asked}
	m.stored = func() *hardwarev1.HardwareStatus { return &s.stored.Status.HardwareStatus }
	steps := &Steps{ctx: context.Background(), settings: StepSettings{PollInterval: time.Second, MetalTimeout: time.Second},
		nodes: &liveNodes{live: node}}
	return &run{Target: q, s: steps, machine: m, node: node, now: time.Unix(1_800_000_000, 0)}, q, s, events
}

func nodeIn(maintenance bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Annotations: map[string]string{}}}
	if maintenance {
		n.Annotations[harvester.AnnotationMaintainStatus] = "completed"
	}
	return n
}

// A request in maintenance mode: the intent is stored before the one
// command; the machine taking it leaves the request pending, and it ends
// complete only once the server's power shows it, never with a second
// command.
func TestRequestedPowerOneCommandAfterTheIntent(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOn}
	r, q, s, _ := newRequestRun(t, nodeIn(true), m, hardwarev1.PowerActionOff)
	require.NoError(t, r.syncRequestedPower(q))
	assert.Equal(t, []machine.PowerAction{machine.ActionOff}, m.commands)
	assert.Equal(t, []hardwarev1.PowerActionResult{hardwarev1.PowerResultSending}, m.atSend, "the intent was stored before the command")
	assert.Equal(t, 2, s.writes, "the intent, then the command's answer")
	la := s.stored.Status.LastPowerAction
	require.NotNil(t, la)
	assert.Equal(t, hardwarev1.PowerResultSent, la.Result, "taken, not done: the server is still on")
	assert.EqualValues(t, 1, la.Attempts)
	assert.EqualValues(t, 3, la.ObservedGeneration)
	assert.Equal(t, []hardwarev1.PowerAction{hardwarev1.PowerActionOff}, q.accepted)
	assert.Empty(t, q.ended, "no actionStatus while the server still shows on")
	assert.True(t, PowerSettling(&s.stored.Status.HardwareStatus, r.now), "the power is read until it shows off")

	// The next pass still sees it on: still pending.
	r.now = r.now.Add(10 * time.Second)
	require.NoError(t, r.syncRequestedPower(q))
	assert.Empty(t, q.ended)
	// Then off: complete.
	m.state = machine.PowerOff
	r.now = r.now.Add(10 * time.Second)
	require.NoError(t, r.syncRequestedPower(q))
	assert.Equal(t, []bool{true}, q.ended)
	assert.Equal(t, hardwarev1.PowerResultSucceeded, r.Hardware().LastPowerAction.Result)
	assert.Equal(t, "off", r.Hardware().PowerState)
	assert.Len(t, m.commands, 1, "one command")
}

// A command the machine took whose effect never shows ends the request
// failed after requestEffectTimeout, saying so; a reading that fails
// meanwhile leaves it pending.
func TestRequestedPowerFailsWhenTheEffectNeverShows(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOn}
	r, q, _, _ := newRequestRun(t, nodeIn(true), m, hardwarev1.PowerActionOff)
	require.NoError(t, r.syncRequestedPower(q))
	m.readErr = &failure.Error{Seam: machine.Seam, Class: failure.Unreachable, Message: "no answer"}
	r.now = r.now.Add(time.Minute)
	require.NoError(t, r.syncRequestedPower(q))
	assert.Empty(t, q.ended)
	m.readErr = nil
	r.now = r.now.Add(requestEffectTimeout)
	require.NoError(t, r.syncRequestedPower(q))
	assert.Equal(t, []bool{false}, q.ended)
	la := r.Hardware().LastPowerAction
	assert.Equal(t, hardwarev1.PowerResultFailed, la.Result)
	assert.Contains(t, la.Message, "was not seen off within 5m0s (its power is on)")
	assert.Len(t, m.commands, 1)
}

// Outside maintenance mode nothing is sent, and the request ends failed,
// saying why, in a Warning Event too.
func TestRequestedPowerRefusedOutsideMaintenance(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOn}
	r, q, _, events := newRequestRun(t, nodeIn(false), m, hardwarev1.PowerActionReboot)
	require.NoError(t, r.syncRequestedPower(q))
	assert.Empty(t, m.commands)
	la := r.Hardware().LastPowerAction
	require.NotNil(t, la)
	assert.Equal(t, hardwarev1.PowerResultFailed, la.Result)
	assert.Contains(t, la.Message, "is not in maintenance mode")
	assert.Equal(t, []bool{false}, q.ended)
	require.Len(t, events.Events, 1)
	assert.Contains(t, <-events.Events, "Warning MaintenanceRequired")
}

// A node that left maintenance mode a moment ago may still be in it in the
// cache: the request is refused on the API server's word, nothing is sent.
func TestRequestedPowerRefusedWhenTheLiveNodeLeftMaintenance(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOn}
	r, q, _, _ := newRequestRun(t, nodeIn(true), m, hardwarev1.PowerActionReboot)
	live := &liveNodes{live: nodeIn(false)}
	r.s.nodes = live
	require.NoError(t, r.syncRequestedPower(q))
	assert.Empty(t, m.commands)
	assert.Equal(t, 1, live.gets)
	la := r.Hardware().LastPowerAction
	require.NotNil(t, la)
	assert.Equal(t, hardwarev1.PowerResultFailed, la.Result)
	assert.Equal(t, []bool{false}, q.ended)
}

// A node put into maintenance mode a moment ago may not be in it in the
// cache yet: the request, which ends at once, is taken on the API server's
// word, and its one command goes out.
func TestRequestedPowerTakenWhenTheLiveNodeEnteredMaintenance(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOn}
	r, q, _, _ := newRequestRun(t, nodeIn(false), m, hardwarev1.PowerActionOff)
	live := &liveNodes{live: nodeIn(true)}
	r.s.nodes = live
	require.NoError(t, r.syncRequestedPower(q))
	assert.Equal(t, []machine.PowerAction{machine.ActionOff}, m.commands)
	assert.Equal(t, 1, live.gets)
	la := r.Hardware().LastPowerAction
	require.NotNil(t, la)
	assert.Equal(t, hardwarev1.PowerResultSent, la.Result)
}

// A server without a node is switched without maintenance mode: no
// workload of the cluster runs on it.
func TestRequestedPowerWithoutNode(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOff}
	r, q, _, _ := newRequestRun(t, nil, m, hardwarev1.PowerActionOn)
	require.NoError(t, r.syncRequestedPower(q))
	assert.Equal(t, []machine.PowerAction{machine.ActionOn}, m.commands)
	m.state = machine.PowerOn
	require.NoError(t, r.syncRequestedPower(q))
	assert.Equal(t, []bool{true}, q.ended)
}

// A node that registered a moment ago may not be in the cache yet: the
// request is not taken for one on a server without a node, and the node,
// not in maintenance mode, gets no command.
func TestRequestedPowerRefusedForANodeTheCacheDoesNotHaveYet(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOn}
	r, q, _, _ := newRequestRun(t, nil, m, hardwarev1.PowerActionOff)
	live := &liveNodes{live: nodeIn(false)}
	r.s.nodes = live
	require.NoError(t, r.syncRequestedPower(q))
	assert.Empty(t, m.commands)
	assert.Equal(t, 1, live.gets)
	assert.Equal(t, []bool{false}, q.ended)
}

// A command the machine refused, or whose answer was lost, ends the request
// failed: never a second command.
func TestRequestedPowerEndsFailedOnAnError(t *testing.T) {
	for _, err := range []error{
		&failure.Error{Seam: machine.Seam, Class: failure.Refused, Message: "the BMC refused the reset"},
		&failure.Error{Seam: machine.Seam, Class: failure.Transient, Message: "connection reset"},
	} {
		m := &fakeMachine{state: machine.PowerOn, powerErr: err}
		r, q, s, _ := newRequestRun(t, nodeIn(true), m, hardwarev1.PowerActionReboot)
		require.NoError(t, r.syncRequestedPower(q))
		assert.Len(t, m.commands, 1)
		assert.Equal(t, hardwarev1.PowerResultFailed, s.stored.Status.LastPowerAction.Result)
		assert.Contains(t, s.stored.Status.LastPowerAction.Message, failure.Message(err))
		assert.Equal(t, []bool{false}, q.ended)
	}
}

// The outcome's write meets another writer's: it is put on the live
// object, not lost (which would leave the request in flight).
func TestRequestedPowerOutcomeSurvivesAConflict(t *testing.T) {
	m := &fakeMachine{state: machine.PowerOn}
	r, q, s, _ := newRequestRun(t, nodeIn(true), m, hardwarev1.PowerActionOff)
	s.conflict = 1
	m.powerErr = &failure.Error{Seam: machine.Seam, Class: failure.Refused, Message: "the BMC refused the reset"}
	require.NoError(t, r.syncRequestedPower(q))
	assert.Len(t, m.commands, 1)
	assert.Equal(t, hardwarev1.PowerResultFailed, s.stored.Status.LastPowerAction.Result)
	assert.Equal(t, []bool{false, false}, q.ended, "recorded on the working copy, then again on the live object")
}

// A request found in flight (the process stopped between the intent and
// the outcome) is never sent again: an off that shows was carried out, a
// reboot cannot be told and ends failed.
func TestRequestedPowerLostAnswer(t *testing.T) {
	for _, tc := range []struct {
		action hardwarev1.PowerAction
		state  machine.PowerState
		want   hardwarev1.PowerActionResult
	}{
		{hardwarev1.PowerActionOff, machine.PowerOff, hardwarev1.PowerResultSucceeded},
		{hardwarev1.PowerActionOff, machine.PowerOn, hardwarev1.PowerResultFailed},
		{hardwarev1.PowerActionReboot, machine.PowerOn, hardwarev1.PowerResultFailed},
	} {
		m := &fakeMachine{state: tc.state}
		r, q, _, _ := newRequestRun(t, nodeIn(true), m, "")
		sent := metav1.NewTime(r.now.Add(-time.Minute))
		r.Hardware().LastPowerAction = &hardwarev1.PowerActionStatus{Action: tc.action, Result: hardwarev1.PowerResultSending, Sent: &sent, Attempts: 1}
		require.NoError(t, r.syncRequestedPower(q))
		assert.Empty(t, m.commands, "%s", tc.action)
		assert.Equal(t, tc.want, r.Hardware().LastPowerAction.Result, "%s while %s", tc.action, tc.state)
		assert.Equal(t, []bool{tc.want == hardwarev1.PowerResultSucceeded}, q.ended)
	}
}

// With forwarding off, the machine's events are read (a BMC's poll reads
// its health and power) and passed, none written: turned on again, only
// what comes after is forwarded.
func TestEventsOffPassesTheCursor(t *testing.T) {
	m := &fakeMachine{events: []machine.Event{
		{ID: "a", Cursor: "c1", Message: "fan"},
		{ID: "b", Cursor: "c2", Message: "psu", Power: machine.PowerOff},
	}}
	r, q, _, _ := newRequestRun(t, nil, m, "")
	q.quiet = true
	// The steps have no Events client here: writing one would panic.
	require.NoError(t, r.forwardEvents())
	assert.Equal(t, "c2", r.Hardware().EventCursor)
	assert.Equal(t, "off", r.Hardware().PowerState)
}

// The apiserver keeps an Event about a namespaced object in its namespace;
// those about Nodes go to default.
func TestEventsOfANamespacedObjectStayInItsNamespace(t *testing.T) {
	p := pendingEvent{ev: machine.Event{ID: "x", Message: "m"}, involved: &involvedObject{owner: "n",
		ref: corev1.ObjectReference{Kind: "Inventory", Namespace: "harvester-system", Name: "n"}}}
	assert.Equal(t, "harvester-system", p.kubeEvent().Namespace)
	p.involved.ref = corev1.ObjectReference{Kind: "Node", Name: "n"}
	assert.Equal(t, metav1.NamespaceDefault, p.kubeEvent().Namespace)
}
