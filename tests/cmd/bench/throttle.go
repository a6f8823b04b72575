package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// runThrottle is the overhead run with the simulator answering a share of
// all Metal calls 429 with a Retry-After: the fleet must still converge,
// with exactly one device per Instance.
func runThrottle(ctx context.Context, b *bench) (result, error) {
	cfg := b.cfg
	res := result{details: []string{throttleMethod(cfg), ""}}
	fl, err := b.startFleet(ctx, "throttle", b.metalOptions(10*time.Second), b.controllerOptions(24*time.Hour))
	if err != nil {
		return res, err
	}
	defer fl.stop()
	fl.metal.sim.InjectFault(metalsim.Fault{
		Kind: metalsim.FaultRateLimit, Probability: cfg.throttleProbability, RetryAfter: cfg.throttleRetryAfter,
	})
	before, err := fl.snapshot(ctx)
	if err != nil {
		return res, err
	}
	pools := poolSet("thr", cfg.networkType, cfg.fleetPools, perPool(cfg.fleetInstances, cfg.fleetPools))
	elapsed, provErr := fl.provision(ctx, pools, managed, cfg.fleetTimeout)
	if provErr != nil && !errors.Is(provErr, context.DeadlineExceeded) {
		return res, provErr
	}
	after, err := fl.snapshot(ctx)
	if err != nil {
		return res, err
	}
	calls := apiCalls(fl.metal.sim.Requests())
	refused := after.ctrl.sum(metricMetalRequests, isThrottledCode) - before.ctrl.sum(metricMetalRequests, isThrottledCode)
	dup := b.devicesPerInstance(fl)
	creates := successfulCreates(calls)
	done := b.env.census(managed)

	completion := fmt.Sprintf("all %d managed in **%s**", cfg.fleetInstances, seconds(elapsed))
	if provErr != nil {
		completion = fmt.Sprintf("**%d/%d managed after %s**", done.done, cfg.fleetInstances, seconds(elapsed))
	}
	verdict := verdictPass
	if provErr != nil || !dup.ok() || creates != cfg.fleetInstances {
		verdict = verdictMiss
	}
	res.rows = append(res.rows, row{
		figure: fmt.Sprintf("5. Throttling: %.0f%% of calls answered 429 (Retry-After %s), %d servers",
			100*cfg.throttleProbability, shortDuration(cfg.throttleRetryAfter), cfg.fleetInstances),
		result: fmt.Sprintf("%s; %d calls reached the API, %d answered 429 (%s); %.0f more held back by the client while "+
			"a Retry-After ran; %s; successful createDevice %d for %d servers",
			completion, len(calls), throttledCount(calls), pct(float64(throttledCount(calls)), float64(len(calls))),
			refused, dup, creates, cfg.fleetInstances),
		target:  "completes; one device per Instance",
		verdict: verdict,
	})
	bd := newBreakdown(before, after, cfg.threads)
	res.details = append(res.details,
		fmt.Sprintf("- %s; calls by operation: %s.", done, formatOps(countOps(calls, nil))),
		"- "+bd.summary()+".")
	return res, nil
}

func throttleMethod(cfg *config) string {
	return fmt.Sprintf("The overhead run (%d %s servers in %d pools, zero device timings) with a simulator fault that "+
		"answers every Metal API call 429 with Retry-After %s and X-RateLimit-* headers with probability %.2f "+
		"(seeded, seed %d). The controller stops calling for the Retry-After after each 429; those refusals never reach "+
		"the API and are counted from its equinix_addon_metal_api_requests_total{code=\"throttled\"}. No duplicate: "+
		"every Instance's tag is on exactly one device, and the simulator stored exactly one create per server.",
		cfg.fleetInstances, cfg.networkType, cfg.fleetPools, cfg.throttleRetryAfter, cfg.throttleProbability, cfg.seed)
}

func isThrottledCode(l map[string]string) bool { return l["code"] == "throttled" }

// deviceCount is how many devices carry each Instance's tag.
type deviceCount struct {
	instances  int
	duplicated int
	missing    int
	untagged   int
}

func (d deviceCount) ok() bool { return d.duplicated == 0 && d.missing == 0 && d.untagged == 0 }

func (d deviceCount) String() string {
	if d.ok() {
		return fmt.Sprintf("devices per Instance tag: exactly 1 for all %d", d.instances)
	}
	return fmt.Sprintf("devices per Instance tag: %d Instances with several, %d with none, %d devices of no Instance",
		d.duplicated, d.missing, d.untagged)
}

func (b *bench) devicesPerInstance(fl *fleet) deviceCount {
	perTag := map[string]int{}
	for _, d := range fl.metal.sim.Devices(projectID) {
		for _, t := range d.GetTags() {
			if uid, ok := equinixv1.TagValue([]string{t}, equinixv1.TagInstance); ok {
				perTag[uid]++
			}
		}
	}
	res := deviceCount{}
	for _, inst := range b.env.instanceList() {
		res.instances++
		switch n := perTag[string(inst.UID)]; {
		case n == 0:
			res.missing++
		case n > 1:
			res.duplicated++
		}
		delete(perTag, string(inst.UID))
	}
	res.untagged = len(perTag)
	return res
}
