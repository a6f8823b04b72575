package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// The simulator-cost scenario measures whether what the simulator (and the
// join agent) spend on a call grows with the fleet. Two simulators run side
// by side, one holding 10 servers and one holding the large fleet (2,000 by
// default), each populated as the controller leaves a pool of ten servers:
// created, ports set, configured, reinstalled into the installer, joined as
// Nodes. Then the same servers go through both, one after the other, so
// that both sizes see the same machine load: each makes the controller's
// calls for one server (adoption list by pool tag, create, reads until
// active, VLAN list, port steps, update, reinstall, reads, ports of the
// final network type, list by instance tag, delete), every call through
// pkg/metal on the real SDK. The handling clock around the simulator's
// HTTP handler gives the simulator's time per call; the join agent's is
// its time from a server's iPXE boot to its Node registered, past the
// simulated install. The paginated list of every device of the cluster is
// measured apart, per device listed: its answer grows with the fleet by
// definition.

// costSmall is the size the large fleet is compared with.
const costSmall = 10

// costWarmup servers per world go first, unmeasured: connections and the
// first use of each code path are not the per-call cost.
const costWarmup = 2

func runSimCost(ctx context.Context, b *bench) (result, error) {
	cfg := b.cfg
	ipxe := httptest.NewServer(harvester.NewIPXEHandler())
	defer ipxe.Close()
	hash, err := harvester.HashPassword("simcost-console-password")
	if err != nil {
		return result{}, err
	}
	var worlds []*costWorld
	defer func() {
		for _, w := range worlds {
			w.metal.stop()
		}
	}()
	for _, size := range []int{costSmall, cfg.simcostDevices} {
		w, err := b.newCostWorld(ctx, fmt.Sprintf("sc%d", size), ipxe.URL, hash)
		if err != nil {
			return result{}, err
		}
		worlds = append(worlds, w)
		start := time.Now()
		if err := w.populate(ctx, size); err != nil {
			return result{}, fmt.Errorf("populating %d servers: %w", size, err)
		}
		b.log.Infof("%d servers provisioned and joined in %s", size, time.Since(start).Round(time.Second))
	}
	small, large := worlds[0], worlds[1]
	start := time.Now()
	for i := 0; i < costWarmup+cfg.simcostServers; i++ {
		for _, w := range worlds {
			w.mu.Lock()
			w.measured = i >= costWarmup
			w.mu.Unlock()
			if err := w.probe(ctx, i); err != nil {
				return result{}, fmt.Errorf("%s, server %d: %w", w.name, i, err)
			}
		}
	}
	b.log.Infof("%d servers measured at each size in %s", cfg.simcostServers, time.Since(start).Round(time.Second))
	var wide [2]perDevice
	for round := 0; round < 5; round++ {
		for i, w := range worlds {
			if err := wide[i].list(ctx, w); err != nil {
				return result{}, err
			}
		}
	}
	return simcostResult(small, large, wide, cfg.simcostDevices, cfg.simcostServers), nil
}

func (b *bench) newCostWorld(ctx context.Context, name, ipxeURL, hash string) (*costWorld, error) {
	// No heartbeats during the run: refreshing every Node is the agent's
	// work per interval, not per server, and would load the apiserver the
	// joins are measured through.
	mopts := b.metalOptions(time.Hour)
	m := startMetal(ctx, b.env.kube, mopts, b.log)
	provider, err := metal.NewProvider(metal.Options{BaseURL: m.url, RequestsPerSecond: -1})
	if err != nil {
		m.stop()
		return nil, err
	}
	client, err := provider.Client(metal.Credentials{Token: metalToken, ProjectID: projectID})
	if err != nil {
		m.stop()
		return nil, err
	}
	w := &costWorld{name: name, metal: m, client: client, ipxeURL: ipxeURL, installTime: mopts.installTime,
		passwordHash: hash, vlans: map[int]string{}, booted: map[string]time.Time{}, ops: map[string]*opCost{}}
	w.watchBoots()
	return w, nil
}

// costPool is the fleet's i-th pool of ten.
func (w *costWorld) costPool(i int) string { return fmt.Sprintf("%s-%d", w.name, i/10) }

// populate provisions n servers of the bench's network type in pools of
// ten, eight at a time.
func (w *costWorld) populate(ctx context.Context, n int) error {
	tmpl := newPool("fleet", equinixv1.NetworkTypeHybrid, 10).Spec.InstanceTemplate
	if _, err := w.metroVLANs(ctx, "sg", network.VXLANs(&tmpl), true); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			s := costServer{name: fmt.Sprintf("%s-fleet-%04d", w.name, i), pool: w.costPool(i), tmpl: &tmpl,
				instance: equinixv1.InstanceTag(fmt.Sprintf("%s-fleet-%d", w.name, i)), fleet: true}
			_, err := w.provision(gctx, s)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// The agent registers the Nodes one after the other.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		return len(w.metal.agent.NodeNames()) >= n, nil
	})
}

// probeTypes alternate, so that the measured calls include the bond's
// disbond (hybrid) and its conversion to layer 2 (layer2-bonded).
var probeTypes = []string{equinixv1.NetworkTypeHybrid, equinixv1.NetworkTypeLayer2Bonded}

// probe takes one more server of a fleet pool through its life: the pool's
// adoption list finds the first pool's ten servers at either size.
func (w *costWorld) probe(ctx context.Context, i int) error {
	tmpl := newPool("probe", probeTypes[i%len(probeTypes)], 10).Spec.InstanceTemplate
	s := costServer{name: fmt.Sprintf("%s-probe-%04d", w.name, i), pool: w.costPool(0), tmpl: &tmpl,
		instance: equinixv1.InstanceTag(fmt.Sprintf("%s-probe-%d", w.name, i))}
	dev, err := w.provision(ctx, s)
	if err != nil {
		return err
	}
	return w.remove(ctx, s, dev.ID)
}

// perDevice is the cost of listing every device of the cluster, per
// device listed.
type perDevice struct {
	handling time.Duration
	devices  int
	pages    int64
}

func (p *perDevice) list(ctx context.Context, w *costWorld) error {
	d0, n0 := w.metal.handling.settled()
	devs, err := w.client.ListDevices(ctx, metal.ListDevicesOptions{Tag: equinixv1.ClusterTag(clusterID), Brief: true})
	if err != nil {
		return fmt.Errorf("listing the cluster's devices: %w", err)
	}
	d1, n1 := w.metal.handling.settled()
	p.handling += d1 - d0
	p.pages += n1 - n0
	p.devices += len(devs)
	return nil
}

func (p perDevice) mean() time.Duration {
	if p.devices == 0 {
		return 0
	}
	return p.handling / time.Duration(p.devices)
}

// totals is a world's handling time and request count over every
// measured call.
func (w *costWorld) totals() (time.Duration, int64) {
	var d time.Duration
	var n int64
	for _, c := range w.ops {
		d += c.handling
		n += c.requests
	}
	return d, n
}

func meanOf(d time.Duration, n int64) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// ratio is a/b, or 0 when nothing was measured.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func simcostResult(small, large *costWorld, wide [2]perDevice, n, servers int) result {
	const target = 2.0
	sd, sn := small.totals()
	ld, ln := large.totals()
	callRatio := ratio(meanOf(ld, ln), meanOf(sd, sn))
	smallJoin := meanOf(small.joins, int64(small.joinCount))
	largeJoin := meanOf(large.joins, int64(large.joinCount))
	joinRatio := ratio(largeJoin, smallJoin)
	wideRatio := ratio(wide[1].mean(), wide[0].mean())
	title := fmt.Sprintf("6. Simulator cost per call, %d vs %d servers", n, costSmall)
	res := result{rows: []row{
		{figure: title,
			result: fmt.Sprintf("%.2f× (%s vs %s per request, %d requests each)", callRatio, micros(meanOf(ld, ln)), micros(meanOf(sd, sn)), ln),
			target: fmt.Sprintf("≤ %.0f×", target), verdict: passOrMiss(callRatio <= target)},
		{figure: "6. Join agent cost per server, same sizes",
			result: fmt.Sprintf("%.2f× (%s vs %s boot → Node, past the install)", joinRatio, micros(largeJoin), micros(smallJoin)),
			target: fmt.Sprintf("≤ %.0f×", target), verdict: passOrMiss(joinRatio <= target)},
		{figure: "6. Cluster-wide paginated device list, per device listed",
			result: fmt.Sprintf("%.2f× (%s vs %s)", wideRatio, micros(wide[1].mean()), micros(wide[0].mean())),
			target: fmt.Sprintf("≤ %.0f×", target), verdict: passOrMiss(wideRatio <= target)},
	}}
	res.details = append(res.details,
		fmt.Sprintf("Two simulators side by side, one with %d servers and one with %d (pools of ten, joined as Nodes), "+
			"each given the same %d servers in turn (after %d unmeasured), each making the controller's calls for one server through pkg/metal. "+
			"Handling is measured around the simulator's HTTP handler; it includes the join agent's synchronous part "+
			"(reading the iPXE script when a server boots), as notifications are delivered before the answer.", costSmall, n, servers, costWarmup),
		"",
		"| Call | Requests | Handling, "+fmt.Sprint(costSmall)+" servers | Handling, "+fmt.Sprint(n)+" servers | Ratio |",
		"|---|---|---|---|---|")
	var ops []string
	for op := range large.ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		s, l := small.ops[op], large.ops[op]
		if s == nil {
			s = &opCost{}
		}
		sm, lm := meanOf(s.handling, s.requests), meanOf(l.handling, l.requests)
		res.details = append(res.details, fmt.Sprintf("| %s | %d / %d | %s | %s | %.2f× |", op, s.requests, l.requests, micros(sm), micros(lm), ratio(lm, sm)))
	}
	res.details = append(res.details, "",
		fmt.Sprintf("- Join agent: %d joins at each size; boot → Node registered past the %s install: %s vs %s.",
			large.joinCount, small.installTime, micros(largeJoin), micros(smallJoin)),
		fmt.Sprintf("- Cluster-wide list (brief, %d per page): %d devices in %d pages vs %d in %d; per device %s vs %s.",
			100, wide[1].devices, wide[1].pages, wide[0].devices, wide[0].pages, micros(wide[1].mean()), micros(wide[0].mean())))
	return res
}
