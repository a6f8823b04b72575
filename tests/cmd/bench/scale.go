package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// The scale scenario's bounds: peak memory under the chart's 256Mi limit
// with room to spare, the Instance reconcile's p99, and convergence time
// against the overhead scenario's fleet of the same run (linear growth from
// 100 to 2,000 servers would be 20×).
const (
	rssTarget     = 200 << 20
	p99Target     = 250 * time.Millisecond
	scalingTarget = 20.0
)

// runScale provisions scale-instances servers in scale-pools pools in one
// controller process and reports convergence time, peak RSS and the
// reconcile latency percentiles.
func runScale(ctx context.Context, b *bench) (result, error) {
	cfg := b.cfg
	res := result{details: []string{scaleMethod(cfg, b.goMemLimit), ""}}
	// Heartbeats every minute: 2,000 nodes at the usual 10s would be 200
	// node writes a second, which the benchmark's apiserver, on the same
	// CPUs, would pay for, not the controller.
	fl, err := b.startFleet(ctx, "scale", b.metalOptions(time.Minute), b.controllerOptions(10*time.Minute))
	if err != nil {
		return res, err
	}
	defer fl.stop()
	before, err := fl.snapshot(ctx)
	if err != nil {
		return res, err
	}
	pools := poolSet("scale", cfg.networkType, cfg.scalePools, perPool(cfg.scaleInstances, cfg.scalePools))
	elapsed, provErr := fl.provision(ctx, pools, managed, cfg.scaleTimeout)
	if provErr != nil && !errors.Is(provErr, context.DeadlineExceeded) {
		return res, provErr
	}
	after, err := fl.snapshot(ctx)
	if err != nil {
		return res, err
	}
	rss, peak, err := fl.ctrl.memory()
	if err != nil {
		return res, err
	}
	bd := newBreakdown(before, after, cfg.threads)
	inst := bd.handlers[instancesResource]
	ops := countOps(fl.calls(), nil)
	calls := ops.total()
	done := fl.b.env.census(managed)

	converge := fmt.Sprintf("**converged in %s**", seconds(elapsed))
	if provErr != nil {
		converge = fmt.Sprintf("**did not converge: %d/%d managed after %s**", done.done, cfg.scaleInstances, seconds(elapsed))
	}
	perServer := float64(calls) / float64(max(done.done, 1))
	p99 := inst.quantile(0.99)
	ok := peak <= rssTarget && provErr == nil && p99 <= p99Target.Seconds()
	against := "the overhead scenario did not run in this run: no ratio"
	if b.fleet.servers > 0 {
		ratio := elapsed.Seconds() / b.fleet.elapsed.Seconds()
		against = fmt.Sprintf("**%.1f×** the %d-server time of this run (%s); calls/server %.1f there",
			ratio, b.fleet.servers, seconds(b.fleet.elapsed), b.fleet.callsPerServer)
		ok = ok && ratio <= scalingTarget && perServer <= b.fleet.callsPerServer*1.05
	}
	floorNote := ""
	if cfg.scaleFloor {
		fl.stop()
		if err := b.env.cleanup(ctx); err != nil {
			return res, err
		}
		b.log.Infof("scale: the floor, a bare client with the minimum writes and calls, for %d servers", cfg.scaleInstances)
		floor, err := b.runFloor(ctx, "sf", cfg.scaleInstances, cfg.scalePools, time.Minute)
		if err != nil {
			return res, err
		}
		floorNote = "; " + scaleFloorNote(floor, elapsed, b.fleet)
		res.details = append(res.details, floorMethod(floor), "")
	}
	res.rows = append(res.rows, row{
		figure: fmt.Sprintf("4. Scale: %d servers in %d pools, one controller", cfg.scaleInstances, cfg.scalePools),
		result: fmt.Sprintf("%s, %s; peak RSS (VmHWM) **%s**; Instance reconcile p50/p95/p99 %s/%s/**%s**; %d Metal calls (%.1f/server)%s",
			converge, against, mib(peak), ms(inst.quantile(0.5)), ms(inst.quantile(0.95)), ms(p99), calls, perServer, floorNote),
		target:  "≤ 20× the 100-server time; p99 ≤ 250 ms; RSS ≤ 200 MiB; calls/server not above the 100-server run's",
		verdict: passOrMiss(ok),
	})
	res.details = append(res.details,
		fmt.Sprintf("- %s. Peak RSS %s, RSS at the end %s.", done, mib(peak), mib(rss)),
		"- "+bd.summary()+".", "")
	res.details = append(res.details, bd.details(max(done.done, 1))...)
	if b.fleet.servers > 0 {
		res.details = append(res.details, "", "Metal calls per server by operation:", "")
		res.details = append(res.details, opsTable(b.fleet.ops, b.fleet.servers, ops, max(done.done, 1))...)
	}
	res.details = append(res.details, "", "Instance handlers separately:", "")
	res.details = append(res.details, handlerTable(before, after, instancesResource)...)
	return res, nil
}

// scaleFloorNote sets the controller's scale run beside the floor's for the
// same fleet: how much of the scale time the floor needs too, how the floor
// itself grows from the overhead fleet, and how long its pieces of work
// (the counterpart of a handler run) held a worker.
func scaleFloorNote(floor floorResult, elapsed time.Duration, small fleetFigure) string {
	note := fmt.Sprintf("the floor for the same fleet took **%s** (the controller **%.2f×** it)",
		seconds(floor.elapsed), elapsed.Seconds()/floor.elapsed.Seconds())
	if small.floor > 0 {
		note += fmt.Sprintf(", **%.1f×** its %d-server time (%s)", floor.elapsed.Seconds()/small.floor.Seconds(),
			small.servers, seconds(small.floor))
	}
	return note + fmt.Sprintf(", its pieces of work p50/p95/p99 %s/%s/%s, %d apiserver writes",
		ms(floor.work.quantile(0.5)), ms(floor.work.quantile(0.95)), ms(floor.work.quantile(0.99)), floor.kubeWrites)
}

func scaleMethod(cfg *config, goMemLimit string) string {
	memory := "no memory limit (--memory-limit none)"
	if goMemLimit != "" {
		memory = fmt.Sprintf("GOMEMLIMIT=%s, which the controller sets itself in a pod with the memory limit %s (--memory-limit)",
			goMemLimit, cfg.memoryLimit)
	}
	return fmt.Sprintf("%d pools of %d %s servers created at once against one controller binary (--threads %d, "+
		"--metal-requests-per-second %.0f, default --poll-interval %s and --orphan-sweep-interval 10m); zero device "+
		"timings, a %s install, node heartbeats every 60s. Convergence: first pool created → every Instance `managed` "+
		"(timeout %s). Peak RSS is VmHWM of the controller process from /proc/<pid>/status. Latency percentiles are "+
		"estimated from the lasso_controller_reconcile_time_seconds histogram (default buckets 5ms…10s, linear "+
		"interpolation inside a bucket, as histogram_quantile does), over every handler run of the Instance controller. "+
		"The controller runs with %s.",
		cfg.scalePools, perPool(cfg.scaleInstances, cfg.scalePools), cfg.networkType, cfg.threads, cfg.metalRPS,
		cfg.pollInterval, cfg.installTime, cfg.scaleTimeout, memory)
}

// handlerTable shows one controller's histograms handler by handler.
func handlerTable(before, after snapshot, kind string) []string {
	handlers := map[string]bool{}
	for _, m := range after.ctrl[metricReconcileTime].GetMetric() {
		l := labelsOf(m)
		if kindOf(l[labelController]) == kind {
			handlers[l[labelHandler]] = true
		}
	}
	names := make([]string, 0, len(handlers))
	for h := range handlers {
		names = append(names, h)
	}
	sort.Strings(names)
	out := []string{"| Handler | Runs | Busy (s) | Mean | p50 | p95 | p99 |", "|---|---|---|---|---|---|---|"}
	for _, name := range names {
		match := func(l map[string]string) bool {
			return kindOf(l[labelController]) == kind && l[labelHandler] == name
		}
		h := after.ctrl.histogram(metricReconcileTime, match).minus(before.ctrl.histogram(metricReconcileTime, match))
		if h.count == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("| %s | %.0f | %.1f | %s | %s | %s | %s |", name, h.count, h.sum,
			ms(h.mean()), ms(h.quantile(0.5)), ms(h.quantile(0.95)), ms(h.quantile(0.99))))
	}
	return out
}

// opsTable sets the calls per server of the overhead fleet and the scale
// fleet side by side, operation by operation, so that a difference in calls
// per server shows where it comes from.
func opsTable(small opCounts, smallServers int, large opCounts, largeServers int) []string {
	names := make([]string, 0, len(small)+len(large))
	for op := range small {
		names = append(names, op)
	}
	for op := range large {
		if _, ok := small[op]; !ok {
			names = append(names, op)
		}
	}
	sort.Strings(names)
	out := []string{fmt.Sprintf("| Operation | %d servers | %d servers |", smallServers, largeServers), "|---|---|---|"}
	for _, op := range names {
		out = append(out, fmt.Sprintf("| %s | %.2f | %.2f |", op,
			float64(small[op])/float64(smallServers), float64(large[op])/float64(largeServers)))
	}
	return out
}
