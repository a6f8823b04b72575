package main

import (
	"context"
	"fmt"
	"time"
)

// runOverhead provisions the fleet (100 servers in 10 pools by default) with
// zero device time and splits the time to all managed between the
// controller and the simulator.
func runOverhead(ctx context.Context, b *bench) (result, error) {
	cfg := b.cfg
	res := result{}
	fl, err := b.startFleet(ctx, "overhead", b.metalOptions(10*time.Second), b.controllerOptions(24*time.Hour))
	if err != nil {
		return res, err
	}
	defer fl.stop()
	before, err := fl.snapshot(ctx)
	if err != nil {
		return res, err
	}
	pools := poolSet("ov", cfg.networkType, cfg.fleetPools, perPool(cfg.fleetInstances, cfg.fleetPools))
	elapsed, err := fl.provision(ctx, pools, managed, cfg.fleetTimeout)
	if err != nil {
		return res, err
	}
	after, err := fl.snapshot(ctx)
	if err != nil {
		return res, err
	}
	bd := newBreakdown(before, after, cfg.threads)
	calls := len(fl.calls())
	res.rows = append(res.rows, row{
		figure: fmt.Sprintf("2. Controller overhead: %d servers in %d pools (%s), zero device time", cfg.fleetInstances, cfg.fleetPools, cfg.networkType),
		result: fmt.Sprintf("**%s** apply → all managed; %d Metal calls (%.1f/server); %s",
			seconds(elapsed), calls, float64(calls)/float64(cfg.fleetInstances), bd.summary()),
		target:  "time and share (no target)",
		verdict: verdictInfo,
	})
	res.details = append([]string{overheadMethod(cfg), ""}, bd.details(cfg.fleetInstances)...)
	return res, nil
}

func overheadMethod(cfg *config) string {
	return fmt.Sprintf("%d pools of %d %s servers created at once; zero device timings, a %s install; controller with "+
		"--threads %d, --metal-requests-per-second %.0f (so its client-side limiter does not dominate) and its default "+
		"--poll-interval %s. Wall time runs from the first pool's creation until every Instance is `managed`. "+
		"Method: the Instance controller's handler time is lasso_controller_reconcile_time_seconds (scraped from the "+
		"binary's /metrics before and after); the time it spent waiting on the Metal API is "+
		"equinix_addon_metal_api_request_duration_seconds; the simulator's share of that is measured around its HTTP "+
		"handler; the rest of the handler time is the controller itself and its apiserver round trips (reads, status "+
		"writes, and client-go's client-side rate limiter on them); CPU is the process's utime+stime from /proc.",
		cfg.fleetPools, perPool(cfg.fleetInstances, cfg.fleetPools), cfg.networkType, cfg.installTime, cfg.threads,
		cfg.metalRPS, cfg.pollInterval)
}
