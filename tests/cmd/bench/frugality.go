package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// frugalityTarget is the bound on measured calls over the minimum.
const frugalityTarget = 1.2

// frugality is one network type's measurement.
type frugality struct {
	typ       string
	servers   int
	perServer map[string]float64
	minimum   minSequence
	elapsed   time.Duration
	// typical is the most frequent sequence of calls on one device, and
	// typicalOf how many devices followed it.
	typical   string
	typicalOf int
}

func (f frugality) measured() float64 {
	var t float64
	for _, v := range f.perServer {
		t += v
	}
	return t
}

func (f frugality) ratio() float64 { return f.measured() / f.minimum.total() }

// runFrugality counts the Metal calls per server from create to managed (and
// converged to the pool's type) for each network type, one pool at a time,
// each against a fresh simulator and controller.
func runFrugality(ctx context.Context, b *bench) (result, error) {
	res := result{details: []string{frugalityMethod(b.cfg)}}
	var all []frugality
	for _, typ := range networkTypes {
		f, err := b.frugalityOf(ctx, typ)
		if cerr := b.env.cleanup(ctx); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", typ, err)
		}
		all = append(all, f)
		verdict := verdictPass
		if f.ratio() > frugalityTarget {
			verdict = verdictMiss
		}
		summary := fmt.Sprintf("%.1f calls/server vs minimum %.1f → **%.2f×**", f.measured(), f.minimum.total(), f.ratio())
		if ex := excess(f.perServer, f.minimum.byOp()); len(ex) > 0 {
			summary += "; over: " + strings.Join(ex, ", ")
		}
		res.rows = append(res.rows, row{
			figure: "1. API frugality, " + typ, result: summary,
			target: fmt.Sprintf("≤ %.1f×", frugalityTarget), verdict: verdict,
		})
	}
	res.details = append(res.details, frugalityTables(all)...)
	return res, nil
}

func frugalityMethod(cfg *config) string {
	return fmt.Sprintf("Per network type: one pool of %d servers (c3.small.x86, eth0 managing, VLANs 1000 and 1001 as in the "+
		"networking guide's examples), reinstall mode, a fresh simulator with zero device timings, a %s install, the controller "+
		"binary with its default --poll-interval %s and a 24h sweep interval (its start-up sweep is excluded). Counted: every "+
		"Metal API request in the simulator's log from the pool's creation until every server is managed with its ports in "+
		"the pool's type and no call came for %s. Per server = total / servers. Minimum = the sequence below. Each "+
		"type's request log is kept in logs/frugality-<type>-requests.log of the benchmark folder.",
		cfg.frugalityPool, cfg.installTime, cfg.pollInterval, cfg.quiet)
}

func (b *bench) frugalityOf(ctx context.Context, typ string) (frugality, error) {
	n := b.cfg.frugalityPool
	name := "frugality-" + typ
	fl, err := b.startFleet(ctx, name, b.metalOptions(10*time.Second), b.controllerOptions(24*time.Hour))
	if err != nil {
		return frugality{}, err
	}
	defer fl.stop()
	elapsed, err := fl.provision(ctx, []*equinixv1.InstancePool{newPool("fr-"+typ, typ, n)}, converged, 5*time.Minute)
	if err != nil {
		return frugality{}, err
	}
	if err := fl.waitQuiet(ctx, b.cfg.quiet, 5*time.Minute); err != nil {
		return frugality{}, err
	}
	calls := fl.calls()
	if err := writeRequestLog(filepath.Join(b.env.workDir, "logs", name+"-requests.log"), calls); err != nil {
		return frugality{}, err
	}
	counts := countOps(calls, nil)
	per := map[string]float64{}
	for op, c := range counts {
		per[op] = float64(c) / float64(n)
	}
	f := frugality{typ: typ, servers: n, perServer: per, minimum: minimumFor(typ, n), elapsed: elapsed}
	f.typical, f.typicalOf = typicalSequence(deviceSequences(calls, fl.metal.sim.Devices(projectID)))
	b.log.Infof("%s: %d servers converged in %s; %.1f calls/server (minimum %.1f, %.2f×)",
		name, n, elapsed.Round(100*time.Millisecond), f.measured(), f.minimum.total(), f.ratio())
	return f, nil
}

// frugalityTables are, per type, the minimum with its reasons and the
// measured calls per operation.
func frugalityTables(all []frugality) []string {
	var out []string
	for _, f := range all {
		out = append(out, "", fmt.Sprintf("**%s** — %d servers converged in %s; %.2f calls/server, minimum %.2f, ratio %.2f×",
			f.typ, f.servers, seconds(f.elapsed), f.measured(), f.minimum.total(), f.ratio()), "")
		out = append(out, fmt.Sprintf("Calls on one device (%d of %d devices): %s.", f.typicalOf, f.servers, f.typical), "")
		out = append(out, "| Operation | Minimum/server | Measured/server | Why the minimum needs it |", "|---|---|---|---|")
		minByOp := f.minimum.byOp()
		seen := map[string]bool{}
		for _, c := range f.minimum {
			out = append(out, fmt.Sprintf("| %s | %s | %s | %s |", c.op, num(c.count), measuredOnce(f, c.op, seen), cell(c.why)))
		}
		var extra []string
		for op := range f.perServer {
			if _, ok := minByOp[op]; !ok {
				extra = append(extra, op)
			}
		}
		sort.Strings(extra)
		for _, op := range extra {
			out = append(out, fmt.Sprintf("| %s | 0 | %s | not in the minimum |", op, num(f.perServer[op])))
		}
	}
	return out
}

// measuredOnce shows an operation's measured count on its first row only,
// since the minimum may list an operation several times for different
// reasons.
func measuredOnce(f frugality, op string, seen map[string]bool) string {
	if seen[op] {
		return "″"
	}
	seen[op] = true
	return num(f.perServer[op])
}

func num(v float64) string {
	if v == float64(int(v)) {
		return fmt.Sprintf("%d", int(v))
	}
	return fmt.Sprintf("%.2f", v)
}
