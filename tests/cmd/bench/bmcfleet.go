package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// bmcFleetConfig is the fleet scenario's settings.
type bmcFleetConfig struct {
	sizes     cli.IntSlice
	interval  time.Duration
	intervals int
	ipmiEvery int
	samples   int
}

func bmcFleetFlags(cfg *bmcFleetConfig) []cli.Flag {
	return []cli.Flag{
		&cli.IntSliceFlag{Name: "fleet-sizes", EnvVars: []string{"BENCH_FLEET_SIZES"}, Value: cli.NewIntSlice(100, 1000), Destination: &cfg.sizes,
			Usage: "nodes with a simulated BMC of the fleet scenario, one run per size"},
		&cli.DurationFlag{Name: "fleet-interval", EnvVars: []string{"BENCH_FLEET_INTERVAL"}, Value: 5 * time.Minute, Destination: &cfg.interval,
			Usage: "the Inventories' spec.events.pollingInterval in the fleet scenario (15m in production; every figure is per poll " +
				"or a share of the interval, and each poll still opens its own session above 30s)"},
		&cli.IntFlag{Name: "fleet-intervals", EnvVars: []string{"BENCH_FLEET_INTERVALS"}, Value: 2, Destination: &cfg.intervals,
			Usage: "poll intervals the fleet scenario measures, after the first contact and half an interval"},
		&cli.IntFlag{Name: "fleet-ipmi-every", EnvVars: []string{"BENCH_FLEET_IPMI_EVERY"}, Value: 2, Destination: &cfg.ipmiEvery,
			Usage: "every n-th node of the fleet has an IPMI BMC (an ipmi_sim process), the rest a Redfish one; 0: none"},
		&cli.IntFlag{Name: "fleet-samples", EnvVars: []string{"BENCH_FLEET_SAMPLES"}, Value: 6, Destination: &cfg.samples,
			Usage: "nodes whose BMC gets an event log entry during the window, to time its Kubernetes Event"},
	}
}

// runBMCFleet runs the hardware chain over fleets of nodes with simulated
// BMCs, one run per size.
func runBMCFleet(ctx context.Context, b *bench) (result, error) {
	cfg := b.cfg.bmcFleet
	res := result{details: []string{bmcFleetMethod(cfg, b.goMemLimit)}}
	var runs []*bmcFleetRun
	for _, n := range cfg.sizes.Value() {
		run, err := b.bmcFleet(ctx, n)
		if err != nil {
			return res, fmt.Errorf("%d nodes: %w", n, err)
		}
		runs = append(runs, run)
		res.rows = append(res.rows, run.rows()...)
	}
	res.details = append(res.details, bmcFleetTable(runs)...)
	return res, nil
}

func bmcFleetMethod(cfg bmcFleetConfig, goMemLimit string) string {
	ipmi := "none"
	if cfg.ipmiEvery > 0 {
		ipmi = fmt.Sprintf("every %s node", ordinal(cfg.ipmiEvery))
	}
	return fmt.Sprintf("Nodes the addon did not provision, each with Seeder's Inventory (events on, spec.events.pollingInterval %s) "+
		"and its own simulated BMC: IPMI on %s (a real OpenIPMI ipmi_sim process each, behind a relay that counts datagrams and "+
		"sessions), Redfish on the rest (the project's responder, each on its own HTTPS port, in the benchmark's process). The "+
		"objects exist before the controller starts (--mode seeder, its defaults, GOMEMLIMIT=%s as under the chart's memory "+
		"limit), as after a restart or an upgrade. After every node's first contact and half an interval, %d intervals are "+
		"measured. The interval is shorter than production's 15 minutes only to shorten the run: every figure is per poll or "+
		"a share of the interval, and above the driver's 30 s idle logout each poll still opens and ends its own session. "+
		"**Minimum** per poll: one session (its setup and end) and each distinct read of the window once. Polls are the "+
		"first status's lastPolled, then the changes of the controller's metric of each node's last poll, scraped every 10 s "+
		"(a poll that finds nothing new writes no status); --bmc-power-freshness is twice the interval, so that the polls read "+
		"the power (figure 7 has the reads between polls); sessions, requests and their start times are the BMCs' own counts. The spread: the "+
		"sessions begun in each second of the window; **no burst** = the busiest second holds no more than polls at uniformly "+
		"random times would reach in 1%% of windows (a Poisson count per second; at least 3). During the window %d sampled BMCs get an event log entry; its delay runs from the entry "+
		"to the Kubernetes Event seen by a watch (the next poll is the chain's pace; the time past it is the chain's own). "+
		"Apiserver requests per poll come from the apiserver's apiserver_request_total (watches left out); no other client "+
		"writes in the window. CPU is the controller's utime+stime from /proc, peak RSS its VmHWM.",
		cfg.interval, ipmi, goMemLimit, cfg.intervals, cfg.samples)
}

func ordinal(n int) string {
	switch n {
	case 1:
		return ""
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return fmt.Sprintf("%dth", n)
}

// bmcFleetRun is one size's figures.
type bmcFleetRun struct {
	nodes    int
	interval time.Duration
	// contact is how long every node's first contact took, and its spread.
	contact       time.Duration
	contactSpread pollSpread
	window        time.Duration
	polls         map[string]int // by protocol
	tallies       map[string]*bmcTally
	spread        pollSpread
	cpu           float64
	peakRSS       uint64
	memoryLimit   uint64
	requests      map[string]float64
	delays        []eventDelay
}

type eventDelay struct {
	node, protocol string
	// total runs from the entry to the Event; pastPoll from the poll that
	// read it (the first after the entry) to the Event.
	total, pastPoll time.Duration
	missed          bool
}

func (b *bench) bmcFleet(ctx context.Context, n int) (*bmcFleetRun, error) {
	cfg := b.cfg.bmcFleet
	b.log.Infof("fleet of %d: starting the BMCs", n)
	bmcs, err := startFleetBMCs(ctx, n, cfg.ipmiEvery)
	if err != nil {
		return nil, err
	}
	defer stopFleetBMCs(bmcs)
	if err := b.createFleetObjects(ctx, bmcs, cfg.interval); err != nil {
		return nil, err
	}
	defer b.deleteFleetObjects(context.WithoutCancel(ctx), bmcs)
	w, err := b.watchFleet(ctx)
	if err != nil {
		return nil, err
	}
	defer w.stop()

	copts := b.controllerOptions(24 * time.Hour)
	// The reads of the power alone between polls are figure 7's: here the
	// polls read it (they come at most one and a half intervals apart).
	copts.extra = append([]string{"--mode", "seeder", "--bmc-power-freshness", (2 * cfg.interval).String()}, copts.extra...)
	start := time.Now()
	ctrl, err := b.env.startController(ctx, fmt.Sprintf("fleet-%d", n), "http://127.0.0.1:9/metal/v1", copts)
	if err != nil {
		return nil, err
	}
	defer ctrl.stop()
	run := &bmcFleetRun{nodes: n, interval: cfg.interval}
	b.log.Infof("fleet of %d: waiting for every first contact", n)
	if err := wait.PollUntilContextTimeout(ctx, time.Second, cfg.interval+10*time.Minute, true, func(context.Context) (bool, error) {
		return w.polled() == n, nil
	}); err != nil {
		return nil, fmt.Errorf("first contact: %d of %d nodes polled: %w", w.polled(), n, err)
	}
	run.contact = time.Since(start)
	run.contactSpread = spreadOf(w.firstPolls(), start.Truncate(time.Second), time.Now().Add(time.Second))
	pollsCtx, stopPolls := context.WithCancel(ctx)
	defer stopPolls()
	go w.followPolls(pollsCtx, ctrl, 10*time.Second)
	if err := pause(ctx, cfg.interval/2); err != nil {
		return nil, err
	}

	from := time.Now()
	c0 := countFleet(bmcs)
	cpu0, err := ctrl.cpuSeconds()
	if err != nil {
		return nil, err
	}
	m0, err := b.env.apiserverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	run.window = time.Duration(cfg.intervals) * cfg.interval
	b.log.Infof("fleet of %d: measuring %s", n, run.window)
	added, err := b.sampleEvents(ctx, bmcs, cfg.samples, run.window)
	if err != nil {
		return nil, err
	}
	if err := pause(ctx, time.Until(from.Add(run.window))); err != nil {
		return nil, err
	}
	to := time.Now()
	c1 := countFleet(bmcs)
	cpu1, err := ctrl.cpuSeconds()
	if err != nil {
		return nil, err
	}
	m1, err := b.env.apiserverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	_, run.peakRSS, err = ctrl.memory()
	if err != nil {
		return nil, err
	}
	run.memoryLimit = chartLimitBytes(b.cfg.memoryLimit)
	run.cpu = cpu1 - cpu0
	run.requests = requestsByResource(m1, m0)
	run.tallies = tally(bmcs, c0, c1, from, to)
	var starts []time.Time
	for _, t := range run.tallies {
		starts = append(starts, t.starts...)
	}
	run.spread = spreadOf(starts, from, to)
	protocolOf := map[string]string{}
	for _, bb := range bmcs {
		protocolOf[bb.node] = bb.protocol
	}
	run.polls = map[string]int{}
	for node, k := range w.pollsIn(from, to) {
		run.polls[protocolOf[node]] += k
	}
	// The last entries' Events may come with the window's last polls.
	if err := pause(ctx, 10*time.Second); err != nil {
		return nil, err
	}
	run.delays = delaysOf(w, bmcs, added)
	b.log.Infof("fleet of %d: %s", n, run.summary())
	return run, nil
}

// createFleetObjects creates each BMC's Node (Ready), Secret and Inventory.
func (b *bench) createFleetObjects(ctx context.Context, bmcs []*fleetBMC, interval time.Duration) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, bb := range bmcs {
		g.Go(func() error {
			if err := createBMCNode(gctx, b, &bmcBench{node: bb.node}); err != nil {
				return err
			}
			inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bb.node}}
			inv.Spec.BaseboardManagementSpec.Connection = bb.connection
			inv.Spec.BaseboardManagementSpec.Connection.AuthSecretRef = corev1.SecretReference{Namespace: namespace, Name: bb.node}
			inv.Spec.Events = seederv1alpha1.Events{Enabled: true, PollingInterval: interval.String()}
			_, err := b.env.client.MetalV1alpha1().Inventories(namespace).Create(gctx, inv, metav1.CreateOptions{})
			return err
		})
	}
	return g.Wait()
}

func (b *bench) deleteFleetObjects(ctx context.Context, bmcs []*fleetBMC) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, bb := range bmcs {
		g.Go(func() error {
			_ = b.env.client.MetalV1alpha1().Inventories(namespace).Delete(gctx, bb.node, metav1.DeleteOptions{})
			_ = b.env.kube.CoreV1().Secrets(namespace).Delete(gctx, bb.node, metav1.DeleteOptions{})
			_ = b.env.kube.CoreV1().Nodes().Delete(gctx, bb.node, metav1.DeleteOptions{})
			return nil
		})
	}
	_ = g.Wait()
}

// sampleEvents adds an event log entry to samples BMCs (both protocols,
// spread over the fleet) at even times within the first part of the
// window, so each is read by a poll inside it.
func (b *bench) sampleEvents(ctx context.Context, bmcs []*fleetBMC, samples int, window time.Duration) (map[string]time.Time, error) {
	added := map[string]time.Time{}
	if samples == 0 {
		return added, nil
	}
	step := len(bmcs) / samples
	last := window - b.cfg.bmcFleet.interval - 30*time.Second
	for i := range samples {
		if i > 0 {
			if err := pause(ctx, last/time.Duration(samples)); err != nil {
				return nil, err
			}
		}
		// Odd offsets reach the IPMI BMCs when every second one is.
		bb := bmcs[min(i*step+i%2, len(bmcs)-1)]
		added[bb.node] = time.Now()
		if err := bb.addLogEntry(); err != nil {
			return nil, fmt.Errorf("adding an event log entry to %s: %w", bb.node, err)
		}
	}
	return added, nil
}

func delaysOf(w *fleetWatch, bmcs []*fleetBMC, added map[string]time.Time) []eventDelay {
	var out []eventDelay
	for _, bb := range bmcs {
		at, ok := added[bb.node]
		if !ok {
			continue
		}
		d := eventDelay{node: bb.node, protocol: bb.protocol}
		seen, ok := w.eventAfter(bb.node, at)
		if !ok {
			d.missed = true
			out = append(out, d)
			continue
		}
		d.total = seen.Sub(at)
		// The poll that read it is the first session still in use after
		// the entry (it may have begun before, and read the log after).
		for _, s := range bb.sessions() {
			if s.To.After(at) {
				d.pastPoll = seen.Sub(later(s.From, at))
				break
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node < out[j].node })
	return out
}

// totalPolls is every poll of the window.
func (r *bmcFleetRun) totalPolls() int {
	n := 0
	for _, k := range r.polls {
		n += k
	}
	return n
}

// writes sums the apiserver's writes of the window, leaving out the
// leader election's lease renewals (a controller's, whatever its fleet)
// and the forwarded Events (one per event log entry, the product); reads
// its gets and lists.
func (r *bmcFleetRun) writes() (writes, reads float64) {
	for k, v := range r.requests {
		switch {
		case notPerPoll(k):
		case isRead(k):
			reads += v
		default:
			writes += v
		}
	}
	return writes, reads
}

func notPerPoll(key string) bool {
	return strings.HasPrefix(key, "leases ") || strings.HasPrefix(key, "events ")
}

func isRead(key string) bool {
	verb := key[strings.LastIndex(key, " ")+1:]
	return verb == "get" || verb == "list"
}

func (r *bmcFleetRun) summary() string {
	w, rd := r.writes()
	return fmt.Sprintf("polls %v, sessions/requests %v, busiest second %d of %d, CPU %.1f s, peak RSS %s, writes %.0f, reads %.0f, delays %+v",
		r.polls, r.talliesString(), r.spread.busiest, r.spread.polls, r.cpu, mib(r.peakRSS), w, rd, r.delays)
}

func (r *bmcFleetRun) talliesString() string {
	var parts []string
	for p, t := range r.tallies {
		parts = append(parts, fmt.Sprintf("%s %d/%d", p, t.sessions, t.requests))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

var protocolNames = map[string]string{"redfish": "Redfish", "ipmi": "IPMI"}

func (r *bmcFleetRun) rows() []row {
	var rows []row
	fig := fmt.Sprintf("8. BMC fleet, %d nodes", r.nodes)
	for _, p := range []string{"redfish", "ipmi"} {
		t, polls := r.tallies[p], r.polls[p]
		if t == nil || polls == 0 {
			continue
		}
		sessions, requests := float64(t.sessions)/float64(polls), float64(t.requests)/float64(polls)
		least := t.leastPerPoll()
		rows = append(rows, row{figure: fmt.Sprintf("%s: %s, per poll per node", fig, protocolNames[p]),
			result: fmt.Sprintf("%.2f sessions, %.1f requests vs minimum %.1f → %.2f× (%d polls of %d BMCs)",
				sessions, requests, least, requests/least, polls, t.bmcs),
			target:  fmt.Sprintf("1 session; ≤ %.2f× the minimum (figure 7's target)", bmcPollTarget),
			verdict: passOrMiss(sessions <= 1.0 && requests <= bmcPollTarget*least)})
	}
	s := r.spread
	rows = append(rows, row{figure: fig + ": spread of the polls",
		result: fmt.Sprintf("busiest second %d of %d polls (**%s**); even spread %.2f/s; first contact: %d nodes in %s, busiest second %d",
			s.busiest, s.polls, pct(float64(s.busiest), float64(s.polls)), s.even(), r.nodes, seconds(r.contact), r.contactSpread.busiest),
		target: fmt.Sprintf("busiest second ≤ %d polls (random times exceed it in 1%% of windows)", s.bound()), verdict: passOrMiss(s.busiest <= s.bound())})
	polls := float64(r.totalPolls())
	cpuPerPoll := r.cpu / polls
	at15 := cpuPerPoll * float64(r.nodes) / (15 * time.Minute).Seconds()
	rows = append(rows, row{figure: fig + ": controller CPU and memory",
		result: fmt.Sprintf("CPU %.1f ms per poll (%.1f%% of a core at this interval; %.1f%% at 15m); peak RSS **%s** of the %s limit",
			1000*cpuPerPoll, 100*r.cpu/r.window.Seconds(), 100*at15, mib(r.peakRSS), mib(r.memoryLimit)),
		target: "peak RSS under the chart's limit", verdict: passOrMiss(r.peakRSS < r.memoryLimit)})
	writes, reads := r.writes()
	rows = append(rows, row{figure: fig + ": apiserver requests per poll per node",
		result:  fmt.Sprintf("%.4f writes (%s), %.2f reads; besides: the forwarded Events and the leader lease", writes/polls, formatCounts(writeCounts(r.requests)), reads/polls),
		target:  fmt.Sprintf("0 writes for a poll that finds nothing new: ≤ %d in the window (a status write for each sampled entry, its cursor), an Event per entry", len(r.delays)),
		verdict: passOrMiss(writes <= float64(len(r.delays)))})
	rows = append(rows, r.delayRow(fig))
	return rows
}

func writeCounts(all map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range all {
		if !isRead(k) && !notPerPoll(k) {
			out[k] = v
		}
	}
	return out
}

func (r *bmcFleetRun) delayRow(fig string) row {
	var total, past []string
	worst, missed := time.Duration(0), 0
	for _, d := range r.delays {
		if d.missed {
			missed++
			continue
		}
		total = append(total, fmt.Sprintf("%s %s", protocolNames[d.protocol], seconds(d.total)))
		past = append(past, ms(d.pastPoll.Seconds()))
		worst = max(worst, d.pastPoll)
	}
	return row{figure: fig + ": BMC event log entry → Kubernetes Event",
		result: fmt.Sprintf("%s; past the poll that read it: %s; %d never arrived", strings.Join(total, ", "), strings.Join(past, ", "), missed),
		target: "the next poll, then ≤ 5 s", verdict: passOrMiss(missed == 0 && worst <= 5*time.Second)}
}

// bmcFleetTable sets the sizes side by side, per node and per poll.
func bmcFleetTable(runs []*bmcFleetRun) []string {
	if len(runs) == 0 {
		return nil
	}
	head, sep := "| Per poll per node |", "|---|"
	for _, r := range runs {
		head += fmt.Sprintf(" %d nodes |", r.nodes)
		sep += "---|"
	}
	lines := []string{"", head, sep}
	add := func(what string, f func(r *bmcFleetRun) string) {
		line := "| " + what + " |"
		for _, r := range runs {
			line += " " + f(r) + " |"
		}
		lines = append(lines, line)
	}
	for _, p := range []string{"redfish", "ipmi"} {
		add(protocolNames[p]+" sessions", func(r *bmcFleetRun) string {
			return perPoll(r.tallies[p], r.polls[p], func(t *bmcTally) float64 { return float64(t.sessions) })
		})
		add(protocolNames[p]+" requests (minimum)", func(r *bmcFleetRun) string {
			t := r.tallies[p]
			if t == nil {
				return "–"
			}
			return perPoll(t, r.polls[p], func(t *bmcTally) float64 { return float64(t.requests) }) + fmt.Sprintf(" (%.1f)", t.leastPerPoll())
		})
	}
	add("controller CPU", func(r *bmcFleetRun) string { return fmt.Sprintf("%.1f ms", 1000*r.cpu/float64(r.totalPolls())) })
	add("apiserver writes", func(r *bmcFleetRun) string {
		w, _ := r.writes()
		return fmt.Sprintf("%.2f", w/float64(r.totalPolls()))
	})
	add("apiserver reads", func(r *bmcFleetRun) string {
		_, rd := r.writes()
		return fmt.Sprintf("%.2f", rd/float64(r.totalPolls()))
	})
	add("polls in the window", func(r *bmcFleetRun) string { return fmt.Sprintf("%d in %s", r.totalPolls(), shortDuration(r.window)) })
	add("peak RSS (whole fleet)", func(r *bmcFleetRun) string { return mib(r.peakRSS) })
	add("busiest second (bound)", func(r *bmcFleetRun) string {
		return fmt.Sprintf("%d of %d (%d)", r.spread.busiest, r.spread.polls, r.spread.bound())
	})
	add("first contact (busiest second)", func(r *bmcFleetRun) string {
		return fmt.Sprintf("%s (%d)", seconds(r.contact), r.contactSpread.busiest)
	})
	lines = append(lines, "", "Every apiserver request of the window, by resource and verb:")
	for _, r := range runs {
		lines = append(lines, fmt.Sprintf("- %d nodes: %s", r.nodes, formatCounts(r.requests)))
	}
	return lines
}

func perPoll(t *bmcTally, polls int, f func(*bmcTally) float64) string {
	if t == nil || polls == 0 {
		return "–"
	}
	v := f(t) / float64(polls)
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// chartLimitBytes is the pod memory limit the controller runs under
// (--memory-limit), or the chart's when that is "none".
func chartLimitBytes(limit string) uint64 {
	q, err := resource.ParseQuantity(limit)
	if err != nil || q.Sign() <= 0 {
		q = resource.MustParse(chartMemoryLimit)
	}
	return uint64(q.Value())
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
