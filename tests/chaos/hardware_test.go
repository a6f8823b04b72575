package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Hardware actions of the campaign: power requests on joined servers,
// maintenance mode switched on and off, and events in the devices' logs.
const (
	actPower       actionKind = "power"
	actReboot      actionKind = "reboot"
	actMaintain    actionKind = "maintain"
	actUnmaintain  actionKind = "unmaintain"
	actDeviceEvent actionKind = "device-event"
)

// Slack of the maintenance invariant: the controller decides on its cache,
// the campaign sees the nodes through a watch of its own, and either may see
// a change a little before the other.
const (
	maintenanceSlack = 10 * time.Second
	joinSlack        = 2 * time.Second
)

// hardwareArgs poll the event log and the termination times every second.
var hardwareArgs = []string{"--device-events-interval", "1s", "--termination-check-interval", "1s"}

// powerLedger records the power requests the campaign made, per Instance
// UID, and the power actions the simulator carried out, with the maintenance
// history of every node, from a watch.
type powerLedger struct {
	mu sync.Mutex
	// requested and applied count per Instance UID and action (on, off,
	// reboot).
	requested, applied map[string]map[string]int
	// actions are the carried-out actions, for the maintenance check.
	actions []appliedAction
	// allowed holds, per node, the times power actions were allowed
	// (maintenance mode) as [from, to) spans; to is zero while it lasts.
	allowed map[string][]span
	created map[string]time.Time
	// rv is the resourceVersion of the newest copy of each node taken.
	rv map[string]uint64
}

type appliedAction struct {
	at       time.Time
	node     string
	uid      string
	kind     string
	deviceID string
}

type span struct{ from, to time.Time }

func newPowerLedger() *powerLedger {
	return &powerLedger{requested: map[string]map[string]int{}, applied: map[string]map[string]int{},
		allowed: map[string][]span{}, created: map[string]time.Time{}, rv: map[string]uint64{}}
}

func count(m map[string]map[string]int, uid, kind string) {
	if m[uid] == nil {
		m[uid] = map[string]int{}
	}
	m[uid][kind]++
}

func (l *powerLedger) request(uid, kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	count(l.requested, uid, kind)
}

// observe takes the simulator's power transitions of the cluster's devices.
func (l *powerLedger) observe(clusterTag string) func(metalsim.Notification) {
	return func(n metalsim.Notification) {
		if !slices.Contains(n.Tags, clusterTag) {
			return
		}
		kind := ""
		switch {
		case n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_POWERING_OFF:
			kind = "off"
		case n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_POWERING_ON:
			kind = "on"
		case n.Type == metalsim.DeviceRebooting && n.Boot != nil && n.Boot.Reason == metalsim.BootReboot:
			kind = "reboot"
		default:
			return
		}
		uid, _ := equinixv1.TagValue(n.Tags, equinixv1.TagInstance)
		l.mu.Lock()
		defer l.mu.Unlock()
		count(l.applied, uid, kind)
		l.actions = append(l.actions, appliedAction{at: time.Now(), node: n.Hostname, uid: uid, kind: kind, deviceID: n.DeviceID})
	}
}

// watchNodes follows every node's maintenance mode.
func (l *powerLedger) watchNodes(env *framework.Env) {
	factory := informers.NewSharedInformerFactory(env.Kube, 0)
	inf := factory.Core().V1().Nodes().Informer()
	seen := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			l.saw(n, time.Now())
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, n any) { seen(n) }})
	factory.Start(env.Ctx.Done())
	cache.WaitForCacheSync(env.Ctx.Done(), inf.HasSynced)
}

// saw takes a Node as the apiserver stored it, seen at the given time: from
// the watch, or from the answer to the campaign's own write of its
// maintenance mode. The answer comes first when the watch lags (it relists
// with a backoff after an apiserver restart, while the controller reads the
// node from the apiserver), so a copy no newer than one already taken
// changes nothing.
func (l *powerLedger) saw(n *corev1.Node, at time.Time) {
	ok, _ := harvester.PowerActionsAllowed(n)
	rv, err := strconv.ParseUint(n.ResourceVersion, 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		if rv <= l.rv[n.Name] {
			return
		}
		l.rv[n.Name] = rv
	}
	if _, known := l.created[n.Name]; !known {
		l.created[n.Name] = at
	}
	spans := l.allowed[n.Name]
	open := len(spans) > 0 && spans[len(spans)-1].to.IsZero()
	switch {
	case ok && !open:
		l.allowed[n.Name] = append(spans, span{from: at})
	case !ok && open:
		spans[len(spans)-1].to = at
	}
}

// record takes a power action a BMC carried out, which the campaign reads
// from the BMC once the run is over.
func (l *powerLedger) record(a appliedAction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	count(l.applied, a.uid, a.kind)
	l.actions = append(l.actions, a)
}

// violations: no joined node's server had its power switched outside
// maintenance mode, and no request was carried out twice (a reboot request
// of a server that is off is carried out as a power-on).
func (l *powerLedger) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, a := range l.actions {
		created, joined := l.created[a.node]
		if !joined || a.at.Sub(created) < joinSlack {
			continue
		}
		if !allowedAround(l.allowed[a.node], a.at) {
			out = append(out, fmt.Sprintf("power %s of device %s at %s: node %s was not in maintenance mode", a.kind, a.deviceID,
				a.at.Format("15:04:05.000"), a.node))
		}
	}
	for _, uid := range sortedKeys(l.applied) {
		app, req := l.applied[uid], l.requested[uid]
		if app["off"] > req["off"] || app["on"]+app["reboot"] > req["on"]+req["reboot"] {
			out = append(out, fmt.Sprintf("Instance UID %s: power actions carried out %v for requests %v", uid, app, req))
		}
	}
	return out
}

// totals counts the requests made and the actions carried out.
func (l *powerLedger) totals() (requests, actions int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.requested {
		for _, n := range m {
			requests += n
		}
	}
	return requests, len(l.actions)
}

func allowedAround(spans []span, at time.Time) bool {
	for _, s := range spans {
		if !s.from.After(at.Add(joinSlack)) && (s.to.IsZero() || !s.to.Before(at.Add(-maintenanceSlack))) {
			return true
		}
	}
	return false
}

// joinedInstances lists the run's Instances that joined and are not going.
func (r *run) joinedInstances() []equinixv1.Instance {
	insts, err := r.runInstances()
	if err != nil {
		return nil
	}
	var out []equinixv1.Instance
	for _, i := range insts {
		if i.Status.JoinedAt != nil && i.DeletionTimestamp == nil {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// setPower asks one Instance for a power state; only a change is a request.
func (r *run) setPower(inst equinixv1.Instance, state equinixv1.PowerState) string {
	if inst.Spec.WantedPowerState() == state {
		return inst.Name + " is asked " + string(state) + " already"
	}
	if err := r.patchInstance(inst.Name, map[string]any{"powerState": state}); err != nil {
		if !r.landed(func() (bool, error) {
			got, err := r.env.Client.EquinixV1().Instances().Get(r.env.Ctx, inst.Name, metav1.GetOptions{})
			return err == nil && got.Spec.WantedPowerState() == state, err
		}) {
			return "refused: " + err.Error()
		}
		r.power.request(string(inst.UID), string(state))
		return fmt.Sprintf("%s %s, stored though its answer was lost (%v)", inst.Name, state, err)
	}
	r.power.request(string(inst.UID), string(state))
	return fmt.Sprintf("%s %s", inst.Name, state)
}

// landed settles a write whose answer was lost: an apiserver that restarts
// may cut the connection after it stored the write, and the controller acts
// on what is stored. It reads until the apiserver answers (a minute at
// most) and reports whether the write is there; an object that is gone has
// none.
func (r *run) landed(stored func() (bool, error)) bool {
	there := false
	r.poll(time.Minute, func() bool {
		ok, err := stored()
		if err != nil && !apierrors.IsNotFound(err) {
			return false
		}
		there = ok
		return true
	})
	return there
}

func (r *run) powerAction(s step) string {
	insts := r.joinedInstances()
	if len(insts) == 0 {
		return "no joined server"
	}
	inst := insts[s.Pick%len(insts)]
	if s.Kind == actPower {
		// The other state than asked for, so that every power step is a
		// request.
		state := equinixv1.PowerOff
		if inst.Spec.WantedPowerState() == equinixv1.PowerOff {
			state = equinixv1.PowerOn
		}
		return r.setPower(inst, state)
	}
	if inst.Spec.WantedPowerState() == equinixv1.PowerOff {
		return "skipped: " + inst.Name + " is asked off"
	}
	at := time.Now().UTC().Truncate(time.Second)
	if old := inst.Spec.RebootRequestedAt; old != nil && !at.After(old.Time) {
		at = old.Add(time.Second)
	}
	if err := r.patchInstance(inst.Name, map[string]any{"rebootRequestedAt": at.Format(time.RFC3339)}); err != nil {
		if !r.landed(func() (bool, error) {
			got, err := r.env.Client.EquinixV1().Instances().Get(r.env.Ctx, inst.Name, metav1.GetOptions{})
			return err == nil && got.Spec.RebootRequestedAt != nil && got.Spec.RebootRequestedAt.Time.Equal(at), err
		}) {
			return "refused: " + err.Error()
		}
		r.power.request(string(inst.UID), "reboot")
		return fmt.Sprintf("reboot %s, stored though its answer was lost (%v)", inst.Name, err)
	}
	r.power.request(string(inst.UID), "reboot")
	return "reboot " + inst.Name
}

func (r *run) patchInstance(name string, spec map[string]any) error {
	raw, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	_, err = r.env.Client.EquinixV1().Instances().Patch(r.env.Ctx, name, types.MergePatchType, raw, metav1.PatchOptions{})
	return err
}

// endMaintenancePatch takes a node out of maintenance mode as the UI's
// disableMaintenanceMode does: uncordoned, the request and status gone.
var endMaintenancePatch = fmt.Sprintf(`{"spec":{"unschedulable":false},"metadata":{"annotations":{%q:null,%q:null}}}`,
	harvester.AnnotationDrainRequested, harvester.AnnotationMaintainStatus)

// maintenance switches a node's maintenance mode as the Harvester UI does;
// the join agent plays Harvester. It is switched off only on nodes whose
// server is not being removed, which waits for it.
func (r *run) maintenance(s step) string {
	insts := r.joinedInstances()
	if len(insts) == 0 {
		return "no joined server"
	}
	name := insts[s.Pick%len(insts)].Name
	var patch string
	if s.Kind == actMaintain {
		patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, harvester.AnnotationDrainRequested)
	} else {
		patch = endMaintenancePatch
	}
	node, err := r.env.Kube.CoreV1().Nodes().Patch(r.env.Ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	r.power.saw(node, time.Now())
	return string(s.Kind) + " " + name
}

func (r *run) deviceEvent(s step) string {
	devs := r.ourDevices()
	if len(devs) == 0 {
		return "no device"
	}
	d := devs[s.Pick%len(devs)]
	if err := r.env.Sim.AddDeviceEvent(d.GetId(), "chaos.note", fmt.Sprintf("{{ device }} chaos note %d", s.Pick)); err != nil {
		return "refused: " + err.Error()
	}
	return d.GetHostname()
}

// powerOnAll ends the chaos's power requests: every joined node goes into
// maintenance mode (so that a power-on may go, and removals find it
// completed) and every server is asked on.
func (r *run) powerOnAll() string {
	insts, err := r.runInstances()
	if err != nil {
		return "listing instances: " + err.Error()
	}
	on := 0
	for _, inst := range insts {
		if inst.Status.JoinedAt == nil {
			continue
		}
		// A node that is gone has nothing to patch.
		_, _ = r.env.Kube.CoreV1().Nodes().Patch(r.env.Ctx, inst.Name, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, harvester.AnnotationDrainRequested)), metav1.PatchOptions{})
		if inst.DeletionTimestamp == nil && inst.Spec.WantedPowerState() == equinixv1.PowerOff {
			r.setPower(inst, equinixv1.PowerOn)
			on++
		}
	}
	r.marks.failed()
	return fmt.Sprintf("%d server(s) asked on again", on)
}

// endMaintenance takes the nodes of the servers that stay out of maintenance
// mode once every server asked on is on again, as a person would after the
// work: a node left in maintenance is unavailable, and a rollout that may
// not lose an available server waits for it for good.
func (r *run) endMaintenance() string {
	settled := r.poll(90*time.Second, func() bool {
		insts, err := r.runInstances()
		if err != nil {
			return false
		}
		for _, inst := range insts {
			c := conditions.Get(inst.Status.Conditions, equinixv1.InstancePowerSynced)
			if inst.DeletionTimestamp == nil && (inst.Status.Status == equinixv1.PhaseOff || c != nil && c.Status != metav1.ConditionTrue) {
				return false
			}
		}
		return true
	})
	// Harvester (the join agent here) may still be finishing a drain it
	// started: the patch is repeated until no such node is in maintenance.
	ended := map[string]bool{}
	cleared := r.poll(30*time.Second, func() bool {
		insts, err := r.runInstances()
		if err != nil {
			return false
		}
		done := true
		for _, inst := range insts {
			if inst.Status.JoinedAt == nil || inst.DeletionTimestamp != nil {
				continue
			}
			node, err := r.env.Kube.CoreV1().Nodes().Get(r.env.Ctx, inst.Name, metav1.GetOptions{})
			if err != nil || !harvester.IsCordoned(node) && !harvester.MaintenanceUnderWay(node) {
				continue
			}
			done = false
			if _, err := r.env.Kube.CoreV1().Nodes().Patch(r.env.Ctx, inst.Name, types.MergePatchType, []byte(endMaintenancePatch), metav1.PatchOptions{}); err == nil {
				ended[inst.Name] = true
			}
		}
		return done
	})
	r.marks.failed()
	return fmt.Sprintf("maintenance ended on %d node(s) (power settled: %t, no node left in maintenance: %t)", len(ended), settled, cleared)
}

// checkHardwareEvents: each machine event became at most one Kubernetes
// Event per subject, counted once (a BMC that two inventories name tells
// both nodes).
func (r *run) checkHardwareEvents() {
	events, err := r.env.Kube.CoreV1().Events("").List(r.env.Ctx, metav1.ListOptions{})
	if err != nil {
		r.violation("listing events: %v", err)
		return
	}
	seen := map[string]string{}
	forwarded := 0
	for _, e := range events.Items {
		id := e.Annotations[equinixv1.AnnotationMachineEventID]
		if id == "" {
			continue
		}
		forwarded++
		key := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name + "|" + id
		if other, dup := seen[key]; dup {
			r.violation("machine event %s was forwarded twice about %s: Events %s and %s", id, e.InvolvedObject.Name, other, e.Name)
		}
		seen[key] = e.Name
		if e.Count != 1 {
			r.violation("the Event %s of machine event %s counts %d", e.Name, id, e.Count)
		}
	}
	r.stats.eventsForwarded = forwarded
	r.stats.powerRequests, r.stats.powerActions = r.power.totals()
	for _, v := range r.power.violations() {
		r.violation("%s", v)
	}
}
