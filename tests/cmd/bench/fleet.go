package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// metalOptions are the simulator settings every scenario shares, with the
// nodes' heartbeat interval.
func (b *bench) metalOptions(heartbeat time.Duration) metalOptions {
	return metalOptions{seed: b.cfg.seed, installTime: b.cfg.installTime, heartbeat: heartbeat}
}

// controllerOptions are the controller flags every scenario shares, with
// the sweep interval.
func (b *bench) controllerOptions(sweep time.Duration) controllerOptions {
	return controllerOptions{
		threads: b.cfg.threads, pollInterval: b.cfg.pollInterval, sweepInterval: sweep,
		requestsPerSecond: b.cfg.metalRPS, burst: int(b.cfg.metalRPS),
		kubeQPS: b.cfg.kubeQPS, kubeBurst: b.cfg.kubeBurst,
		extra: b.cfg.controllerArgs.Value(), goMemLimit: b.goMemLimit,
	}
}

// fleet is one scenario's world: a fresh simulator and join agent, and the
// controller binary pointed at it.
type fleet struct {
	b     *bench
	name  string
	metal *metalWorld
	ctrl  *controller
	// startupCalls are the calls of the last controller start, until its
	// start-up sweep had passed.
	startupCalls opCounts
}

// startFleet starts the simulator and the controller, lets the controller's
// start-up sweep pass and empties the request log, so what follows is the
// scenario's own traffic.
func (b *bench) startFleet(ctx context.Context, name string, mopts metalOptions, copts controllerOptions) (*fleet, error) {
	f := &fleet{b: b, name: name, metal: startMetal(ctx, b.env.kube, mopts, b.log)}
	if err := f.startController(ctx, name, copts); err != nil {
		f.metal.stop()
		return nil, err
	}
	return f, nil
}

// startController (re)starts the controller and waits for its start-up
// sweep, then resets the request log.
func (f *fleet) startController(ctx context.Context, name string, copts controllerOptions) error {
	ctrl, err := f.b.env.startController(ctx, name, f.metal.url, copts)
	if err != nil {
		return err
	}
	f.ctrl = ctrl
	if err := f.waitSweep(ctx); err != nil {
		return err
	}
	f.startupCalls = countOps(apiCalls(f.metal.sim.Requests()), nil)
	f.metal.sim.ResetRequests()
	return nil
}

// waitSweep waits for the sweep the controller runs as soon as its caches
// have synced.
func (f *fleet) waitSweep(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, r := range f.metal.sim.RequestsFor(metalsim.OpFindProjectDevices) {
			if isSweepList(r) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s: the controller's start-up sweep did not come: %w", f.name, err)
	}
	return nil
}

func (f *fleet) stopController() {
	if f.ctrl != nil {
		f.ctrl.stop()
		f.ctrl = nil
	}
}

// stop ends the scenario's world; stopping twice is harmless.
func (f *fleet) stop() {
	f.stopController()
	if f.metal != nil {
		f.metal.stop()
		f.metal = nil
	}
}

// calls is the Metal API traffic since the last reset, without the sweep's
// device lists.
func (f *fleet) calls() []metalsim.Request {
	var out []metalsim.Request
	for _, r := range apiCalls(f.metal.sim.Requests()) {
		if !isSweepList(r) {
			out = append(out, r)
		}
	}
	return out
}

// waitQuiet waits until no Metal API call came for quiet, so that requeued
// polls after the last server converged are counted too.
func (f *fleet) waitQuiet(ctx context.Context, quiet, timeout time.Duration) error {
	last, since := -1, time.Now()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		n := len(f.metal.sim.Requests())
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet, nil
	})
	if err != nil {
		return fmt.Errorf("%s: Metal API calls did not stop for %s within %s: %w", f.name, quiet, timeout, err)
	}
	return nil
}

// snapshot is what the controller, the simulator and the apiserver had
// counted at one moment.
type snapshot struct {
	at        time.Time
	ctrl      metrics
	apiserver metrics
	cpu       float64
	handling  time.Duration
}

func (f *fleet) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now()}
	var err error
	if s.ctrl, err = f.ctrl.scrape(ctx); err != nil {
		return s, err
	}
	if s.apiserver, err = f.b.env.apiserverMetrics(ctx); err != nil {
		return s, err
	}
	if s.cpu, err = f.ctrl.cpuSeconds(); err != nil {
		return s, err
	}
	s.handling, _ = f.metal.handling.snapshot()
	return s, nil
}

// provision creates pools and waits until their servers are done, logging
// progress. It returns the time from the first create.
func (f *fleet) provision(ctx context.Context, pools []*equinixv1.InstancePool, done func(*equinixv1.Instance) bool, timeout time.Duration) (time.Duration, error) {
	want := 0
	for _, p := range pools {
		want += int(p.Spec.Count)
	}
	start := time.Now()
	if err := f.b.env.createPools(ctx, pools); err != nil {
		return 0, err
	}
	_, err := f.b.env.waitFor(ctx, f.name, want, done, timeout, func(c census) {
		mem := ""
		if rss, _, err := f.ctrl.memory(); err == nil {
			mem = ", controller RSS " + mib(rss)
		}
		f.b.log.Infof("%s: %s after %s; %d Metal calls%s", f.name, c, time.Since(start).Round(time.Second),
			len(f.metal.sim.Requests()), mem)
	})
	return time.Since(start), err
}

// perPool splits instances over pools, rounding up.
func perPool(instances, pools int) int {
	return int(math.Ceil(float64(instances) / float64(pools)))
}
