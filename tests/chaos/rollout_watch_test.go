package chaos

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instancepool"
)

// quietFor is how long after a failure (and after the controller started)
// the availability bound is checked again: long enough for the failure to
// show on the Instances the controller decides on.
const quietFor = 4 * time.Second

// disturbances records when the run last broke a server (a device deleted
// out of band, a node NotReady, stopped or deleted) and when the controller
// last started and was last killed, as unix nanoseconds.
type disturbances struct {
	failure, start, kill atomic.Int64
	// apiDown and apiBack are when the kube-apiserver last stopped and
	// came back: while it is away no controller sees a change or writes
	// anything, whatever it runs.
	apiDown, apiBack atomic.Int64
}

func (d *disturbances) failed()  { d.failure.Store(time.Now().UnixNano()) }
func (d *disturbances) started() { d.start.Store(time.Now().UnixNano()) }
func (d *disturbances) killed()  { d.kill.Store(time.Now().UnixNano()) }

func (d *disturbances) apiserverDown() { d.apiDown.Store(time.Now().UnixNano()) }
func (d *disturbances) apiserverBack() { d.apiBack.Store(time.Now().UnixNano()) }

// apiserverAway reports whether the kube-apiserver is stopped now, and
// when it last came back.
func (d *disturbances) apiserverAway() (bool, time.Time) {
	down, back := d.apiDown.Load(), d.apiBack.Load()
	return down > back, time.Unix(0, back)
}

// quiet reports whether the controller runs, started at least quietFor ago,
// and no server was broken for as long.
func (d *disturbances) quiet(now time.Time) bool {
	start, kill, failure := d.start.Load(), d.kill.Load(), d.failure.Load()
	return start > kill && now.UnixNano()-start >= int64(quietFor) && now.UnixNano()-failure >= int64(quietFor)
}

// failureKinds are the actions that break servers, or take them down on a
// person's request (a power-off or a reboot): neither is the rollout's doing.
var failureKinds = map[actionKind]bool{actDeleteDevice: true, actNotReady: true, actServerDown: true, actDeleteNode: true,
	actPower: true, actReboot: true}

// rolloutWatch samples the run's pools and Instances while the chaos runs
// and the pools settle, and checks every pool that rolls out (an Instance,
// being removed or not, made from another template than the pool's) under
// spec.rollout, once the controller has seen its spec:
//   - it never holds more than count + maxSurge servers, those being
//     removed included: once within the bound, a rollout stays within it
//     whatever fails, since its replacements count against it too;
//   - it never has fewer than count - maxUnavailable available servers
//     (managed, not being removed and, for the layer-2 types, converted
//     after the join, as maxUnavailable counts them: the conversion cuts
//     the node's network for a moment), checked from a moment it had
//     enough and nothing had failed for a while, until something fails;
//   - every device lives in the project its Instance recorded.
type rolloutWatch struct {
	r       *run
	marks   *disturbances
	mu      sync.Mutex
	windows map[types.UID]*rolloutWindow
	found   []string
	// checked counts samples of rolling pools under each bound.
	surgeChecked, availableChecked int
	stop, done                     chan struct{}
}

// rolloutWindow is what the watch knows of one pool at one generation.
type rolloutWindow struct {
	generation             int64
	surgeArmed, availArmed bool
}

func watchRollouts(r *run, marks *disturbances) *rolloutWatch {
	w := &rolloutWatch{r: r, marks: marks, windows: map[types.UID]*rolloutWindow{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.sample()
			}
		}
	}()
	return w
}

// finish stops the watch and returns what it found.
func (w *rolloutWatch) finish() (found []string, summary string) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found, fmt.Sprintf("rollout bounds checked on %d samples (surge) and %d (availability)", w.surgeChecked, w.availableChecked)
}

func (w *rolloutWatch) violation(format string, args ...interface{}) {
	if len(w.found) < 20 {
		w.found = append(w.found, fmt.Sprintf(format, args...))
	}
}

// sample reads the pools, their Instances and the pools again; a pool whose
// spec changed in between is left for the next sample.
func (w *rolloutWatch) sample() {
	quiet := w.marks.quiet(time.Now())
	before, err := w.r.runPools()
	if err != nil {
		return // the apiserver may be restarting
	}
	insts, err := w.r.runInstances()
	if err != nil {
		return
	}
	after, err := w.r.runPools()
	if err != nil {
		return
	}
	quiet = quiet && w.marks.quiet(time.Now())
	generation := map[types.UID]int64{}
	for _, p := range after {
		generation[p.UID] = p.Generation
	}
	byPool := map[string][]*equinixv1.Instance{}
	for i := range insts {
		byPool[insts[i].Spec.PoolName] = append(byPool[insts[i].Spec.PoolName], &insts[i])
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range before {
		p := &before[i]
		if p.DeletionTimestamp != nil || generation[p.UID] != p.Generation {
			continue
		}
		w.checkProjects(byPool[p.Name])
		win := w.windows[p.UID]
		if win == nil || win.generation != p.Generation {
			win = &rolloutWindow{generation: p.Generation}
			w.windows[p.UID] = win
		}
		w.checkPool(p, byPool[p.Name], win, quiet)
	}
}

func (w *rolloutWatch) checkPool(p *equinixv1.InstancePool, insts []*equinixv1.Instance, win *rolloutWindow, quiet bool) {
	if p.Status.ObservedGeneration != p.Generation || p.Spec.Count == 0 || !rollingOut(p, insts) {
		win.surgeArmed, win.availArmed = false, false
		return
	}
	count := int(p.Spec.Count)
	surge, unavailable := rolloutBounds(p.Spec.Rollout, count)
	available := 0
	for _, i := range insts {
		if i.DeletionTimestamp == nil && i.Status.Status == equinixv1.PhaseManaged && instancepool.NetworkFinal(i) {
			available++
		}
	}
	if win.surgeArmed {
		w.surgeChecked++
		if len(insts) > count+surge {
			w.violation("pool %s (generation %d) rolls out with %d servers, more than count %d + maxSurge %d: %s",
				p.Name, p.Generation, len(insts), count, surge, describeServers(insts))
		}
	}
	win.surgeArmed = win.surgeArmed || len(insts) <= count+surge
	if !quiet {
		win.availArmed = false
		return
	}
	if win.availArmed {
		w.availableChecked++
		if available < count-unavailable {
			w.violation("pool %s (generation %d) rolls out with %d available servers, fewer than count %d - maxUnavailable %d, with nothing failed for %s: %s",
				p.Name, p.Generation, available, count, unavailable, quietFor, describeServers(insts))
		}
	}
	win.availArmed = win.availArmed || available >= count-unavailable
}

// rollingOut reports whether a pool rolls out: one of its Instances, being
// removed or not, was made from another template.
func rollingOut(p *equinixv1.InstancePool, insts []*equinixv1.Instance) bool {
	hash := instancepool.TemplateHash(&p.Spec.InstanceTemplate)
	for _, i := range insts {
		if i.Annotations[equinixv1.AnnotationTemplateHash] != hash {
			return true
		}
	}
	return false
}

// checkProjects: every device lives in the project its Instance recorded.
func (w *rolloutWatch) checkProjects(insts []*equinixv1.Instance) {
	for _, i := range insts {
		if i.Status.InstanceID == "" || i.Status.ProjectID == "" {
			continue
		}
		if project, ok := w.r.ledger.projectOf(i.Status.InstanceID); ok && project != i.Status.ProjectID {
			w.violation("instance %s recorded project %s, but its device %s was made in project %s", i.Name, i.Status.ProjectID, i.Status.InstanceID, project)
		}
	}
}

func describeServers(insts []*equinixv1.Instance) string {
	out := ""
	for _, i := range insts {
		state := i.Status.Status
		if i.DeletionTimestamp != nil {
			state = "removing"
		}
		out += fmt.Sprintf("%s=%s ", i.Name, state)
	}
	return out
}

// rollOutQuietly rolls every pool out once more after the chaos, to the
// other plan under its final bounds, once nothing has failed for a while:
// the watch then checks both bounds through a whole rollout, in either
// project. The pools then settle again.
func (r *run) rollOutQuietly() {
	r.poll(2*quietFor, func() bool { return r.marks.quiet(time.Now()) })
	pools, err := r.runPools()
	if err != nil {
		r.violation("listing pools for the quiet rollout: %v", err)
		return
	}
	for _, p := range pools {
		if p.DeletionTimestamp != nil || p.Spec.Count == 0 {
			continue
		}
		b := r.plan.Final[p.Name]
		outcome := r.updatePool(p.Name, func(p *equinixv1.InstancePool) {
			p.Spec.Plan = otherPlan(p.Spec.Plan)
			p.Spec.Rollout = rolloutStrategy(poolSpec{Surge: b[0], Unavailable: b[1]})
		})
		r.notes = append(r.notes, fmt.Sprintf("quiesce: quiet rollout of %s (surge %s, unavailable %s): %s", p.Name, b[0], b[1], outcome))
	}
	r.settle()
}
