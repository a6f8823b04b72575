package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// idleSettle is how long a restarted controller is given to resync every
// Instance before the idle window opens; what it calls meanwhile is its
// start-up cost, reported apart.
const idleSettle = 15 * time.Second

// devicesPerPage is the page size the addon's Metal client asks for.
const devicesPerPage = 100

// eventsLookBack is how far before its last read the hardware chain lists
// the project's event log again (events the API lists late). The idle
// windows open once the provisioning's events are older than that: a window
// right after the provisioning would otherwise count the re-read of its whole
// event burst, which an idle cluster never pays.
const eventsLookBack = time.Minute

// eventsInterval is the controller's default --device-events-interval: one
// project event list (one page while idle) each time.
const eventsInterval = 5 * time.Minute

// runIdle provisions the fleet, then restarts the controller with the
// default sweep interval and with a 1-minute one and counts its Metal calls
// while every server stays healthy and managed (nodes heartbeat every 10s,
// so heartbeat-driven reconciles are part of what is measured).
func runIdle(ctx context.Context, b *bench) (result, error) {
	cfg := b.cfg
	res := result{details: []string{idleMethod(cfg), ""}}
	fl, err := b.startFleet(ctx, "idle-provision", b.metalOptions(10*time.Second), b.controllerOptions(24*time.Hour))
	if err != nil {
		return res, err
	}
	defer fl.stop()
	pools := poolSet("idle", cfg.networkType, cfg.fleetPools, perPool(cfg.fleetInstances, cfg.fleetPools))
	if _, err := fl.provision(ctx, pools, managed, cfg.fleetTimeout); err != nil {
		return res, err
	}
	if err := pause(ctx, eventsLookBack); err != nil {
		return res, err
	}
	for _, sweep := range []time.Duration{10 * time.Minute, time.Minute} {
		rw, lines, err := b.idleWindow(ctx, fl, sweep)
		if err != nil {
			return res, err
		}
		res.rows = append(res.rows, rw)
		res.details = append(res.details, lines...)
	}
	return res, nil
}

func idleMethod(cfg *config) string {
	return fmt.Sprintf("%d %s servers in %d pools are provisioned and managed; their nodes heartbeat every 10s. The "+
		"controller is then restarted (once the provisioning's events are older than the %s the event list looks back) with each --orphan-sweep-interval (the hardware chain at its defaults: the project's "+
		"event log every %s, no spot server to watch); after its start-up sweep and %s of resync the "+
		"simulator's request log is emptied and every Metal API request of the next %s is counted. A periodic list is the "+
		"sweep's device list by this cluster's tag (%d devices per page) or its VLAN list, or the hardware chain's project "+
		"event list or plan catalog; anything else would be per-instance polling.", cfg.fleetInstances, cfg.networkType,
		cfg.fleetPools, shortDuration(eventsLookBack), shortDuration(eventsInterval), idleSettle, cfg.idleWindow, devicesPerPage)
}

func (b *bench) idleWindow(ctx context.Context, fl *fleet, sweep time.Duration) (row, []string, error) {
	cfg := b.cfg
	fl.stopController()
	// The restart's cost starts here, not with the provisioning before it.
	fl.metal.sim.ResetRequests()
	name := fmt.Sprintf("idle-sweep-%s", shortDuration(sweep))
	if err := fl.startController(ctx, name, b.controllerOptions(sweep)); err != nil {
		return row{}, nil, err
	}
	startup := fl.startupCalls
	if err := pause(ctx, idleSettle); err != nil {
		return row{}, nil, err
	}
	for op, n := range countOps(apiCalls(fl.metal.sim.Requests()), nil) {
		startup[op] += n
	}
	fl.metal.sim.ResetRequests()
	b.log.Infof("%s: counting Metal calls for %s", name, cfg.idleWindow)
	if err := pause(ctx, cfg.idleWindow); err != nil {
		return row{}, nil, err
	}
	calls := apiCalls(fl.metal.sim.Requests())
	minutes := cfg.idleWindow.Minutes()
	periodic := countOps(calls, isPeriodicList)
	other := countOps(calls, func(r metalsim.Request) bool { return !isPeriodicList(r) })
	if n := len(fl.b.env.instanceList()); n != cfg.fleetInstances {
		return row{}, nil, fmt.Errorf("%s: %d Instances, want %d", name, n, cfg.fleetInstances)
	}
	// One sweep lists every device page and the VLANs of the one metro; the
	// hardware chain reads one page of the project's event log per interval.
	perSweep := math.Ceil(float64(cfg.fleetInstances)/devicesPerPage) + 1
	predicted := perSweep/sweep.Minutes() + 1/eventsInterval.Minutes()
	verdict := verdictPass
	if other.total() > 0 {
		verdict = verdictMiss
	}
	rw := row{
		figure: fmt.Sprintf("3. Idle cost: %d managed servers, sweep every %s", cfg.fleetInstances, shortDuration(sweep)),
		result: fmt.Sprintf("**%.2f calls/min** over %s (periodic lists: %s; per-instance: %s); the schedule predicts %.2f/min "+
			"(%.0f calls per sweep, 1 event list per %s); a restart cost %d calls",
			float64(len(calls))/minutes, shortDuration(cfg.idleWindow), periodic.perMinute(minutes), other.perMinute(minutes),
			predicted, perSweep, shortDuration(eventsInterval), startup.total()),
		target:  "only periodic paginated lists",
		verdict: verdict,
	}
	lines := []string{
		fmt.Sprintf("- Sweep every %s: %d calls in %s. Periodic lists: %s. Per-instance calls: %s. "+
			"Start-up (start-up sweep and resync, not in the window): %s.",
			shortDuration(sweep), len(calls), shortDuration(cfg.idleWindow), formatOps(periodic), formatOps(other), formatOps(startup)),
	}
	return rw, lines, nil
}

// pause waits d unless ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func formatOps(c opCounts) string {
	if len(c) == 0 {
		return "none"
	}
	m := map[string]float64{}
	for op, n := range c {
		m[op] = float64(n)
	}
	return formatCounts(m)
}

// shortDuration drops time.Duration's zero units: 10m rather than 10m0s.
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}
