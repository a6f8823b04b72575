package inventory

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/bmcendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

const (
	// bmcRetry is the longest wait before a BMC that failed is tried again
	// (a shorter poll interval wins): a BMC that is rebooting or whose
	// network blipped is back within minutes.
	bmcRetry = time.Minute
	// blockedRecheck paces an Inventory that cannot run for a cause no
	// watch brings back: its Secret, read by name only.
	blockedRecheck = time.Minute
	// secretRecheck paces the reads of the Secret while the BMC's refusal
	// of its credentials holds every login back: a changed Secret lifts
	// the hold at the next read, not at the end of the hold.
	secretRecheck = 10 * time.Second
)

// Sync runs the chain for an Inventory: where it is and its node, the
// Secret it names, then the hardware steps with its BMC as the machine.
func (h *Handler) Sync(key string, inv *seederv1alpha1.Inventory) (*seederv1alpha1.Inventory, error) {
	if inv == nil {
		h.driver.Forget(key)
		h.specs.forget(key)
		h.intervals.forget(key)
		_, name, _ := strings.Cut(key, "/")
		h.fence.Forget(name)
		return nil, nil
	}
	if h.seeder.present() {
		// The real Seeder serves the Inventories: not one field is
		// touched, an Event says why once.
		h.seeder.tell(inv)
		return inv, nil
	}
	// Seeder does not run: what it left on the Inventory is the addon's.
	inv, err := h.releaseSeederFinalizer(inv)
	if err != nil {
		return nil, err
	}
	if inv.DeletionTimestamp != nil && len(inv.Finalizers) == 0 {
		// Released: the Inventory is gone, there is no status to write.
		h.driver.Forget(key)
		return inv, nil
	}
	now := h.clock()
	inv = h.written.Latest(inv)
	t := h.newTarget(inv, now, h.specs.settling(key, inv, now))
	adoptSeederStatus(t)
	adoptSeederRequest(t)
	h.schemaCondition(t)
	r := &run{h: h, now: now, owner: key}
	return t.Finish(r.sync(t))
}

// run is one pass over one Inventory: its node, once found, and the
// pass's time.
type run struct {
	h   *Handler
	now time.Time
	// owner names the Inventory's machine in the driver (its key).
	owner string
	node  *corev1.Node
}

func (r *run) sync(t *target) error {
	inv := t.Obj
	if inv.DeletionTimestamp != nil {
		r.h.driver.Forget(r.owner)
		return nil
	}
	if inv.Namespace != seederv1alpha1.InventoryNamespace {
		t.SetCondition(equinixv1.ConditionStalled, metav1.ConditionTrue, equinixv1.ReasonWrongNamespace, wrongNamespace(inv))
		return nil
	}
	wasBound := conditions.IsTrue(inv.Status.Conditions, equinixv1.BMCNodeFound)
	ok, err := r.bindNode(t)
	if err != nil || !ok {
		return err
	}
	// The Secret is read only when the pass has something for the BMC,
	// or when its machine asks for it all the same.
	secret := &secretRead{r: r, t: t}
	m, ep, interval := r.machine(t, wasBound, secret)
	powerDue := func() bool {
		due, _ := m.PowerDue(r.h.settings.PowerFresh)
		return r.h.settings.PowerFresh > 0 && due
	}
	if r.needsBMC(t, m.ReadsDue, powerDue) {
		ok, err := secret.ready()
		if err != nil {
			return err
		}
		if !ok {
			// Fencing says why a NotReady node is not fenced.
			return r.h.fence.Step(t, nil, r.node, r.now)
		}
	}
	err = r.h.steps.Sync(t, m, r.node, r.now)
	r.freshPower(t, m)
	err = r.observeBMC(t, m, ep, interval, err)
	// Fencing comes after the steps and what the BMC answered: it reads
	// whether the BMC took the credentials, and uses the same machine.
	err = errors.Join(err, secret.err, r.h.fence.Step(t, m, r.node, r.now))
	// The session stays for the next pass when that comes soon (a power
	// action followed, a short poll interval), and is logged out otherwise.
	m.Release(t.After())
	return err
}

// machine is the pass's machine, the Inventory's BMC polled at its
// interval, whose credentials secret reads when the pass first needs them;
// ep is its endpoint without them, the first of its candidates (the others
// are tried when nothing answers there).
func (r *run) machine(t *target, wasBound bool, secret *secretRead) (*bmcdriver.Machine, bmc.Endpoint, time.Duration) {
	inv := t.Obj
	interval := r.h.pollInterval(t)
	var last time.Time
	if hw := inv.Status.Hardware; hw != nil && hw.LastPolled != nil {
		last = hw.LastPolled.Time
	}
	var pace time.Duration
	if hardware.PowerSettling(t.Hardware(), r.now) {
		// The checks of an action's effect keep the pace of the requeue,
		// whatever else brings the Inventory back in between.
		pace = t.PowerRecheck(r.h.settings.PollInterval)
	}
	// Spread: a fleet of Inventories, all seen at once when the controller
	// starts, is polled evenly over the interval, each at its own phase.
	// A node bound in this pass (a server that just joined, a pool's
	// server among them) gets its health now, not an interval later.
	candidates := bmcendpoint.Candidates(inv, r.h.settings.BMCTimeout)
	ep := candidates[0]
	m := r.h.driver.Machine(ep, bmcdriver.MachineOptions{Owner: r.owner, Key: string(inv.UID), Interval: interval, LastPolled: last,
		Spread: true, PowerPace: pace, PollNow: r.node != nil && !wasBound, Now: r.h.clock, Credentials: secret.credentials,
		Fallbacks: candidates[1:]})
	return m, ep, interval
}

// freshPower keeps the power the Inventory shows (status.machinePowerState,
// from which Harvester's UI offers Power On or Shut Down) no older than
// --bmc-power-freshness between polls: once older, the power alone is
// read, at the least cost to the BMC (bmcdriver.Machine.FreshPower), and
// the status is written only if it changed. A failure is the machine's to
// report, as any other.
func (r *run) freshPower(t *target, m *bmcdriver.Machine) {
	fresh := r.h.settings.PowerFresh
	if fresh <= 0 || t.Obj.DeletionTimestamp != nil {
		return
	}
	if due, _ := m.PowerDue(fresh); due {
		// Its failure shows in the machine's Observation.
		_, _ = m.FreshPower(r.h.ctx)
	}
	if _, left := m.PowerDue(fresh); left > 0 {
		t.Requeue(left)
	}
}

func wrongNamespace(inv *seederv1alpha1.Inventory) string {
	return fmt.Sprintf("Inventories are served only in namespace %s, where Harvester looks up a node's Inventory; "+
		"this one in %s is left alone: create it in %s", seederv1alpha1.InventoryNamespace, inv.Namespace, seederv1alpha1.InventoryNamespace)
}

// bindNode finds the node, which is the Inventory's name (Harvester looks
// an Inventory up by its node's name), and makes sure the Inventory may act
// on it: the UI's annotation names the same node, and it is not one of the
// addon's own servers. An Inventory without a node stands for a server
// that has none: its BMC is read and its power switched, as no node of the
// cluster runs on it.
func (r *run) bindNode(t *target) (bool, error) {
	name := t.Obj.Name
	if named, ok := t.Obj.Annotations[seederv1alpha1.AnnotationLocalNodeName]; ok && named != name {
		t.SetCondition(equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonNodeNameMismatch, fmt.Sprintf(
			"annotation %s names node %q, but an Inventory is its node's: Harvester looks it up by the node's name, %q here; "+
				"create the Inventory of node %q under that name, or remove the annotation", seederv1alpha1.AnnotationLocalNodeName, named, name, named))
		return false, nil
	}
	node, err := r.h.nodes.Get(name)
	node = r.h.nodeWrites.Latest(node)
	switch {
	case apierrors.IsNotFound(err):
		t.SetCondition(equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonServerWithoutNode, fmt.Sprintf(
			"no node is named %s: the Inventory stands for a server without a node; its BMC is read, and its power is switched "+
				"on request without maintenance mode (no node of the cluster runs on it)", name))
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading node %s: %w", name, err)
	}
	if !conditions.IsTrue(t.Obj.Status.Conditions, equinixv1.BMCNodeFound) && node.Labels[equinixv1.LabelInstance] == "" {
		// The first binding reads the Node once from the API server: a
		// label it got a moment ago may not be in the cache yet, and the
		// Node of one of the addon's servers must never get facts from
		// an Inventory.
		if node, err = r.h.liveNodes.Nodes().Get(r.h.ctx, name, metav1.GetOptions{}); err != nil {
			return false, fmt.Errorf("reading node %s: %w", name, err)
		}
	}
	if inst := node.Labels[equinixv1.LabelInstance]; inst != "" {
		if r.h.poolServerOf(t.Obj, inst) {
			r.node = node
			t.SetCondition(equinixv1.BMCNodeFound, metav1.ConditionTrue, equinixv1.ReasonNodeFound, fmt.Sprintf(
				"node %s exists: the server of Instance %s, which claimed this Inventory", name, inst))
			return true, nil
		}
		t.SetCondition(equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonNodeProvisioned, fmt.Sprintf(
			"node %s is the addon's own server (Instance %s), whose hardware its Instance reports; delete this Inventory", name, inst))
		return false, nil
	}
	r.node = node
	t.SetCondition(equinixv1.BMCNodeFound, metav1.ConditionTrue, equinixv1.ReasonNodeFound, fmt.Sprintf("node %s exists", name))
	return true, nil
}

// poolServerOf reports whether the Inventory is the server of the owned
// Instance named inst: the Instance claimed it (its name and UID on the
// Inventory), and so installed the node of its name. Its node is bound as
// any other: hardware, events and fencing reach it. An Equinix Metal
// server's node never is (its Instance reports its hardware).
func (h *Handler) poolServerOf(inv *seederv1alpha1.Inventory, inst string) bool {
	if h.instances == nil {
		return false
	}
	i, err := h.instances.Get(inst)
	return err == nil && i.Spec.Owned() && common.ClaimedBy(inv, i)
}

// pollInterval is spec.events.pollingInterval, read within
// [MinPollingInterval, MaxPollingInterval]: the UI accepts any number of
// hours, minutes or seconds (0s, 48h), and the schema takes what it takes,
// so a value outside is read as the nearest bound, with a Warning Event
// once per generation. An empty one (an object stored before the schema's
// default) is Seeder's default.
func (h *Handler) pollInterval(t *target) time.Duration {
	inv := t.Obj
	raw := inv.Spec.Events.PollingInterval
	d, why := clampInterval(raw)
	if why != "" && h.intervals.first(inv.Namespace+"/"+inv.Name, inv.Generation) {
		t.Eventf(equinixv1.ReasonPollingIntervalClamped, "spec.events.pollingInterval %q %s: the BMC is read every %s", raw, why, d)
	}
	return d
}

// goDuration is the schema's pattern of a polling interval.
var goDuration = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)

// clampInterval reads a polling interval within its bounds; why says what
// was wrong with it, "" when nothing was.
func clampInterval(raw string) (time.Duration, string) {
	if raw == "" {
		return seederv1alpha1.DefaultPollingInterval, ""
	}
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil && goDuration.MatchString(raw):
		// Digits and units the schema lets through, too many of them for
		// a Go duration: longer than the ceiling anyway.
		return seederv1alpha1.MaxPollingInterval, fmt.Sprintf("is longer than the longest interval, %s", seederv1alpha1.MaxPollingInterval)
	case err != nil:
		return seederv1alpha1.DefaultPollingInterval, fmt.Sprintf("is not a duration (%v), so the default %s is used", err, seederv1alpha1.DefaultPollingInterval)
	case d < seederv1alpha1.MinPollingInterval:
		return seederv1alpha1.MinPollingInterval, fmt.Sprintf("is shorter than the shortest interval, %s", seederv1alpha1.MinPollingInterval)
	case d > seederv1alpha1.MaxPollingInterval:
		return seederv1alpha1.MaxPollingInterval, fmt.Sprintf("is longer than the longest interval, %s", seederv1alpha1.MaxPollingInterval)
	}
	return d, ""
}
