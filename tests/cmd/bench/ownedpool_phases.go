package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia/bootmediatest"
)

// The milestones of a server on its way from its Instance to a Ready
// node, in order: each phase of the figure runs from one to the next.
const (
	milestoneScaled = iota
	milestoneCreated
	milestoneClaimed
	milestonePowered
	milestoneScript
	milestoneConfig
	milestoneRegistered
	milestoneReady
	milestones
)

// phaseNames name the phase that ends at each milestone.
var phaseNames = [milestones]string{
	milestoneCreated:    "scale-up → Instance",
	milestoneClaimed:    "Instance → claim",
	milestonePowered:    "claim → power on",
	milestoneScript:     "power on → script served",
	milestoneConfig:     "script → configuration served",
	milestoneRegistered: "configuration → node registered",
	milestoneReady:      "registered → Ready",
}

// reached says which milestones an Instance's status shows.
func reached(i *equinixv1.Instance) [milestones]bool {
	st := i.Status
	return [milestones]bool{
		milestoneCreated:    true,
		milestoneClaimed:    st.Server != "",
		milestonePowered:    st.PowerRequestedAt != nil,
		milestoneScript:     st.BootScriptServedAt != nil,
		milestoneConfig:     st.InstallConfigServedAt != nil,
		milestoneRegistered: st.NodeRegisteredAt != nil,
		milestoneReady:      st.Status == equinixv1.PhaseManaged,
	}
}

// phaseClock times each Instance of a pool through its milestones as the
// benchmark's watch sees them. The status keeps the same steps' times, but
// in whole seconds (metav1.Time), as does the controller's histogram that
// is computed from them: too coarse for servers that take a second from
// claim to Ready. The watch's delay is the same for every milestone.
type phaseClock struct {
	pool string
	mu   sync.Mutex
	// scaled is when the pool was told to grow.
	scaled time.Time
	seen   map[string]*[milestones]time.Time
}

// begin marks the scale-up, where every server's first phase starts.
func (c *phaseClock) begin(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scaled = at
}

func newPhaseClock(pool string) *phaseClock {
	return &phaseClock{pool: pool, seen: map[string]*[milestones]time.Time{}}
}

// handler feeds the clock from the Instances' watch.
func (c *phaseClock) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(obj, time.Now()) },
		UpdateFunc: func(_, obj any) { c.observe(obj, time.Now()) },
	}
}

func (c *phaseClock) observe(obj any, at time.Time) {
	i, ok := obj.(*equinixv1.Instance)
	if !ok || i.Labels[equinixv1.LabelPool] != c.pool {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	times := c.seen[i.Name]
	if times == nil {
		times = &[milestones]time.Time{milestoneScaled: c.scaled}
		c.seen[i.Name] = times
	}
	for m, ok := range reached(i) {
		if ok && times[m].IsZero() {
			times[m] = at
		}
	}
}

// phaseStats is one phase over the pool's servers.
type phaseStats struct {
	mean, most time.Duration
	servers    int
}

// phases are each phase's mean and longest over the servers that went
// through it. A milestone the watch did not see on its own (two steps in
// one update) ends its phase at the same moment as the next begins.
func (c *phaseClock) phases() [milestones]phaseStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [milestones]phaseStats
	var total [milestones]time.Duration
	for _, times := range c.seen {
		for m := milestoneCreated; m < milestones; m++ {
			if times[m].IsZero() || times[m-1].IsZero() {
				continue
			}
			d := times[m].Sub(times[m-1])
			total[m] += d
			out[m].servers++
			out[m].most = max(out[m].most, d)
		}
	}
	for m := range out {
		if out[m].servers > 0 {
			out[m].mean = total[m] / time.Duration(out[m].servers)
		}
	}
	return out
}

// timeline is each server's milestones, as milliseconds since the
// scale-up, one server a line in the order the pool created them: where
// the servers wait on each other shows as steps that line up.
func (c *phaseClock) timeline() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.seen))
	for name := range c.seen {
		names = append(names, name)
	}
	sort.Slice(names, func(a, b int) bool {
		ta, tb := c.seen[names[a]][milestoneCreated], c.seen[names[b]][milestoneCreated]
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return names[a] < names[b]
	})
	var out strings.Builder
	out.WriteString("# ms since the scale-up:")
	for m := milestoneCreated; m < milestones; m++ {
		out.WriteString(" | " + phaseNames[m][strings.LastIndex(phaseNames[m], "→ ")+len("→ "):])
	}
	out.WriteString("\n")
	for _, name := range names {
		times := c.seen[name]
		out.WriteString(name)
		for m := milestoneCreated; m < milestones; m++ {
			if times[m].IsZero() {
				out.WriteString(" -")
				continue
			}
			fmt.Fprintf(&out, " %d", times[m].Sub(times[milestoneScaled]).Milliseconds())
		}
		out.WriteString("\n")
	}
	return out.String()
}

// describe renders the phases as "name mean (longest)", in order.
func describePhases(ps [milestones]phaseStats) string {
	var parts []string
	for m := milestoneCreated; m < milestones; m++ {
		parts = append(parts, fmt.Sprintf("%s %s (longest %s)", phaseNames[m], millis(ps[m].mean), millis(ps[m].most)))
	}
	return strings.Join(parts, "; ")
}

func millis(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// phaseRow is one line of the phases' table.
func phaseRow(bmc, pool string, all time.Duration, ps [milestones]phaseStats, updates, cpu string) string {
	cells := []string{bmc, pool}
	for m := milestoneCreated; m < milestones; m++ {
		cells = append(cells, fmt.Sprintf("%s (%s)", millis(ps[m].mean), millis(ps[m].most)))
	}
	cells = append(cells, millis(all), updates, cpu)
	return "| " + strings.Join(cells, " | ") + " |"
}

// updatesBetween are the updates of resource (its subresource, "" for the
// object itself) the apiserver answered between two scrapes of its
// metrics, and how many of them it refused as conflicts. Inventories: each
// claim is one update, and a claim that lost a race to another is one
// more. Instances' status: the boot endpoint's steps and the Instance
// chain's passes meet on it, and a writer over an older copy conflicts.
func updatesBetween(before, after metrics, resource, subresource string) (all, conflicts float64) {
	isUpdate := func(l map[string]string) bool {
		return l["resource"] == resource && (l["verb"] == "PUT" || l["verb"] == "UPDATE") && l["subresource"] == subresource
	}
	isConflict := func(l map[string]string) bool { return isUpdate(l) && l["code"] == "409" }
	all = after.sum("apiserver_request_total", isUpdate) - before.sum("apiserver_request_total", isUpdate)
	conflicts = after.sum("apiserver_request_total", isConflict) - before.sum("apiserver_request_total", isConflict)
	return all, conflicts
}

// requestsByKind are the requests the apiserver answered between two
// scrapes by resource (and subresource) and verb, the most first: every
// client's, the controller's with the benchmark's and the servers'.
func requestsByKind(before, after metrics) string {
	count := func(ms metrics) map[string]float64 {
		out := map[string]float64{}
		for _, m := range ms["apiserver_request_total"].GetMetric() {
			l := labelsOf(m)
			kind := l["resource"]
			if l["subresource"] != "" {
				kind += "/" + l["subresource"]
			}
			out[l["verb"]+" "+kind] += m.GetCounter().GetValue()
		}
		return out
	}
	was, now := count(before), count(after)
	type entry struct {
		kind string
		n    float64
	}
	var all []entry
	for kind, n := range now {
		if d := n - was[kind]; d > 0 && !strings.HasPrefix(kind, "WATCH") {
			all = append(all, entry{kind, d})
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].n > all[b].n })
	var parts []string
	for _, e := range all {
		parts = append(parts, fmt.Sprintf("%s %.0f", e.kind, e.n))
	}
	return strings.Join(parts, ", ")
}

// clientWaitByVerb is clientWait per verb: the seconds waited.
func clientWaitByVerb(before, after metrics) string {
	var parts []string
	for _, verb := range []string{"GET", "LIST", "POST", "PUT", "PATCH", "DELETE"} {
		match := func(l map[string]string) bool { return l["verb"] == verb }
		h := after.histogram(metricClientWait, match).minus(before.histogram(metricClientWait, match))
		if h.count > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f requests %.2f s", verb, h.count, h.sum))
		}
	}
	return strings.Join(parts, ", ")
}

// clientWait is what the controller's apiserver requests waited in its
// client-side limit (--kube-api-qps) between two scrapes of its metrics:
// the requests and the seconds in all.
func clientWait(before, after metrics) (requests, seconds float64) {
	h := after.histogram(metricClientWait, nil).minus(before.histogram(metricClientWait, nil))
	return h.count, h.sum
}

// machineCPU is the CPU time every process of the machine has used, and
// the time the CPUs could have given: how busy the shared cores were
// between two reads says whether the pool waited for the CPU.
func machineCPU() (busy, total float64, err error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc: %w", err)
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc/stat: %w", err)
	}
	c := st.CPUTotal
	idle := c.Idle + c.Iowait
	busy = c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	return busy, busy + idle, nil
}

// bootLoadersDir holds the loader the boot endpoint builds its images
// with: a stand-in UEFI application, as the servers read the image and
// do not run it.
func bootLoadersDir(workDir string) (string, error) {
	dir, err := os.MkdirTemp(workDir, "boot-loaders-")
	if err != nil {
		return "", fmt.Errorf("making the boot loaders' folder: %w", err)
	}
	path := filepath.Join(dir, bootmedia.FileEFIAMD64)
	if err := os.WriteFile(path, bootmediatest.EFIApp(bootmediatest.MachineAMD64), 0o600); err != nil {
		return "", fmt.Errorf("writing the stand-in boot loader: %w", err)
	}
	return dir, nil
}
