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
	ops := countOps(fl.calls(), nil)
	calls := ops.total()
	b.fleet = fleetFigure{servers: cfg.fleetInstances, elapsed: elapsed, callsPerServer: float64(calls) / float64(cfg.fleetInstances), ops: ops}
	fl.stop()
	if err := b.env.cleanup(ctx); err != nil {
		return res, err
	}
	b.log.Info("overhead: the floor, a bare client with the minimum writes and calls")
	floor, err := b.runFloor(ctx, "fl", cfg.fleetInstances, cfg.fleetPools, 10*time.Second)
	if err != nil {
		return res, err
	}
	b.fleet.floor = floor.elapsed
	ratio := elapsed.Seconds() / floor.elapsed.Seconds()
	res.rows = append(res.rows, row{
		figure: fmt.Sprintf("2. Controller overhead: %d servers in %d pools (%s), zero device time", cfg.fleetInstances, cfg.fleetPools, cfg.networkType),
		result: fmt.Sprintf("**%s** apply → all managed, floor %s → **%.2f×**; %d Metal calls (%.1f/server, floor %.1f); %.1f Instance writes/server (floor %.1f); %s",
			seconds(elapsed), seconds(floor.elapsed), ratio, calls, float64(calls)/float64(cfg.fleetInstances),
			float64(floor.metalCalls)/float64(floor.serverCount), bd.instanceWritesPerServer(cfg.fleetInstances),
			float64(floor.instanceWrites)/float64(floor.serverCount), bd.summary()),
		target:  "≤ 1.5× the floor; ≤ 6 Instance writes/server",
		verdict: passOrMiss(ratio <= 1.5 && bd.instanceWritesPerServer(cfg.fleetInstances) <= 6),
	})
	res.details = append([]string{overheadMethod(cfg), "", floorMethod(floor), ""}, bd.details(cfg.fleetInstances)...)
	return res, nil
}

func floorMethod(f floorResult) string {
	return fmt.Sprintf("The floor: the same %d servers, right after, on the same apiserver with a simulator and join agent "+
		"started the same way, taken to a Ready node with what a user gets from the controller (a managed Instance, "+
		"its console Secret, the Node's labels and provider ID, the pool's status) by a bare client "+
		"(tests/cmd/bench/floor.go) that makes only the writes and calls no correct controller can do without: per "+
		"server the Instance, its create intent, the console Secret, the create, one read of the active device, the "+
		"port steps (read back only where the answer does not show them), the installer and join configuration, the "+
		"reinstall intent, the reinstall, the userdata cleared, the join and one patch of the Node; per pool one "+
		"adoption list and its status when it starts and when it is ready; per metro the VLANs. Same client-side "+
		"limits (the controller's --kube-api-qps and --kube-api-burst, one token bucket for every apiserver request "+
		"as the controller's client factory has, and its Metal rate) and as many workers as the controller, a worker "+
		"being free while its server waits. It took %s: %d Metal calls, %d apiserver writes (%d of Instances).",
		f.serverCount, seconds(f.elapsed), f.metalCalls, f.kubeWrites, f.instanceWrites)
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
