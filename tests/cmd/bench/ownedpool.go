package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// The owned-pool scenario's settings: a pool of 20 servers grown from
// none, shrunk to 5, then to none; one more server, alone, is the floor.
const (
	ownedPoolSize   = 20
	ownedPoolKeep   = 5
	ownedPoolLabel  = "bench.equinix.harvesterhci.io/pool"
	ownedPoolName   = "owned"
	ownedFloorName  = "owned-floor"
	ownedPoolWait   = 5 * time.Minute
	ownedHeartbeats = 10 * time.Second
	// ownedMaintenancePass is how often Harvester's side moves a drain on.
	ownedMaintenancePass = 100 * time.Millisecond
)

// ownedProtocol is a kind of BMC the scenario runs the pool on, with the
// names of its pools.
type ownedProtocol struct {
	protocol, title string
	pool, floor     string
	// media: the BMCs offer virtual media, which the controller boots the
	// servers from (an image it builds with the boot loaders given).
	media bool
}

// leastToGrow is the minimum of BMC commands per server to grow: a boot
// override and a power on, and with virtual media an insert before and
// an eject at the join.
func (p ownedProtocol) leastToGrow() int {
	if p.media {
		return 4
	}
	return 2
}

var ownedProtocols = []ownedProtocol{
	{protocol: "redfish", title: "Redfish", pool: ownedPoolName, floor: ownedFloorName},
	{protocol: "ipmi", title: "IPMI", pool: ownedPoolName + "-ipmi", floor: ownedFloorName + "-ipmi"},
}

// ownedMediaProtocol is the pool on Redfish BMCs that offer virtual media
// (BENCH_OWNED_MEDIA, on unless set false): each server boots from the
// image the boot endpoint builds for its claim, which the simulated
// servers read as their BMC does.
var ownedMediaProtocol = ownedProtocol{protocol: "redfish-media", title: "Redfish virtual media", pool: ownedPoolName + "-media",
	floor: ownedFloorName + "-media", media: true}

func ownedPoolMethod(b *bench) string {
	return fmt.Sprintf("%d servers people own, run twice: each a Redfish BMC of the project's responder (which records every request), "+
		"then each an IPMI BMC, OpenIPMI's ipmi_sim (whose trace records every request in a session) behind a relay that sees the "+
		"sessions; and a simulated server that PXE-boots into the controller's boot endpoint when powered on with a one-time network boot, "+
		"installs in %s and registers its Node; their Inventories in %s, reached by a controller of their own in --mode seeder "+
		"--owned-pools at --poll-interval %s. One InstancePool selects them: 0 → %d (until every Instance is managed) → %d → 0 "+
		"(until the released servers are off and their Inventories free); Harvester's maintenance mode, which the controller "+
		"asks before it switches a joined server off, is played by the join agent (a drain moves on every %s). **Minimum** per server: a boot override and a power "+
		"on to grow, a power off to shrink (Redfish: a PATCH of the system's Boot, a ComputerSystem.Reset On, a Reset ForceOff or "+
		"GracefulShutdown; IPMI: one Set System Boot Options of parameter 5, the boot flags, one Chassis Control power up, one Chassis "+
		"Control power down or soft off); reads, logins and logouts are counted apart (IPMI: a login is a session the relay saw; ipmi_sim answers Set Session "+
		"Privilege Level and Close Session without tracing them, so they are among the datagrams the relay counts, with the session setup). "+
		"**Floor** of the time to all joined: one more server on the same kind of BMC in a pool of its own, alone, grown 0 → 1 by the same "+
		"controller just before (one server's whole chain: claim, boot override, power on, PXE, install, join, managed). Each step's requests, "+
		"by server, are in logs/ownedpool-<protocol>-<step>-requests.log of the benchmark folder.",
		ownedPoolSize, b.cfg.installTime, namespace, b.cfg.pollInterval, ownedPoolSize, ownedPoolKeep, ownedMaintenancePass)
}

// runOwnedPool measures the BMC commands and the time of a pool of owned
// servers through its whole life, on Redfish BMCs and then on IPMI ones.
func runOwnedPool(ctx context.Context, b *bench) (res result, err error) {
	res = result{details: []string{ownedPoolMethod(b), "",
		"| BMC | Step | Boot override | Power on | Power off | Insert / eject media | Other commands | Logins | Logouts | Reads | Datagrams to the BMC | Most sessions at once |",
		"|---|---|---|---|---|---|---|---|---|---|---|---|"}}
	phases := []string{"", "Time of each phase, from the scale-up to every server's node Ready: mean over the servers (longest), " +
		"as the benchmark's watch of the Instances saw each step in their status.", "",
		"| BMC | Pool | scale-up → Instance | Instance → claim | claim → power on | power on → script served | script → configuration served | " +
			"configuration → node registered | registered → Ready | scale-up → all Ready | Inventory updates (conflicts); Instance status writes (conflicts); " +
			"client-side wait (--kube-api-qps) | CPU: controller; all cores |",
		"|---|---|---|---|---|---|---|---|---|---|---|---|"}
	// Named results: the phases measured so far are reported on an error too.
	defer func() { res.details = append(res.details, phases...) }()
	kinds := ownedProtocols
	if b.cfg.ownedMedia {
		kinds = append(kinds[:len(kinds):len(kinds)], ownedMediaProtocol)
	}
	for i, p := range kinds {
		if i > 0 {
			// The next kind of BMC starts from an empty cluster.
			if err := b.env.cleanup(ctx); err != nil {
				return res, fmt.Errorf("cleaning up after %s: %w", kinds[i-1].title, err)
			}
		}
		if err := b.runOwnedPoolOn(ctx, p, &res, &phases); err != nil {
			return res, fmt.Errorf("%s: %w", p.title, err)
		}
	}
	return res, nil
}

// runOwnedPoolOn runs the pool's life on one kind of BMC, with a
// controller of its own, and adds its rows and details to res, and the
// rows of its phases to phases.
func (b *bench) runOwnedPoolOn(ctx context.Context, p ownedProtocol, res *result, phases *[]string) error {
	copts := b.controllerOptions(24 * time.Hour)
	copts.extra = append([]string{"--mode", "seeder", "--owned-pools"}, copts.extra...)
	if p.media {
		dir, err := bootLoadersDir(b.env.workDir)
		if err != nil {
			return err
		}
		copts.extra = append(copts.extra, "--boot-loaders-dir", dir)
	}
	name := "ownedpool"
	if p.protocol != "redfish" {
		name += "-" + p.protocol
	}
	ctrl, err := b.env.startController(ctx, name, "http://127.0.0.1:9/metal/v1", copts)
	if err != nil {
		return err
	}
	defer ctrl.stop()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fleet := ownedfleet.New(ownedfleet.Options{Kube: b.env.kube,
		Expect:  joinagent.Expect{ServerURL: "https://" + vip + ":443", Token: joinToken},
		Version: harvesterVersion, Endpoint: "http://" + ctrl.ipxeAddr,
		InstallTime: b.cfg.installTime, HeartbeatInterval: ownedHeartbeats, Log: b.log.WithField("component", "owned-fleet")})
	fleet.Start(fctx)
	// Harvester completes the maintenance the controller asks before it
	// switches a joined server off; the join agent plays that side (no
	// Metal device of its own is involved).
	harvester := joinagent.New(metalsim.New(metalsim.Options{}), joinagent.Options{Kube: b.env.kube, Log: agentLog(b.log)})
	go harvester.EmulateMaintenance(fctx, ownedMaintenancePass)

	var pool []*ownedServer
	defer func() {
		for _, s := range pool {
			s.remove(b)
		}
	}()
	floorServer, err := b.addOwnedServer(ctx, fleet, p.protocol, 0, p.floor)
	if floorServer != nil {
		defer floorServer.remove(b)
	}
	if err != nil {
		return err
	}
	for i := 1; i <= ownedPoolSize; i++ {
		s, err := b.addOwnedServer(ctx, fleet, p.protocol, i, p.pool)
		if s != nil {
			pool = append(pool, s)
		}
		if err != nil {
			return err
		}
	}
	if err := b.waitReached(ctx, append([]*ownedServer{floorServer}, pool...)); err != nil {
		return fmt.Errorf("reaching the BMCs: %w", err)
	}

	floorClock, poolClock := newPhaseClock(p.floor), newPhaseClock(p.pool)
	for _, c := range []*phaseClock{floorClock, poolClock} {
		reg, err := b.env.instances.AddEventHandler(c.handler())
		if err != nil {
			return fmt.Errorf("watching the phases of pool %s: %w", c.pool, err)
		}
		defer func() { _ = b.env.instances.RemoveEventHandler(reg) }()
	}
	floor, err := b.ownedFloor(ctx, p.floor, floorServer, floorClock)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}

	if err := b.createOwnedPool(ctx, p.pool, 0); err != nil {
		return err
	}
	api0, err := b.env.apiserverMetrics(ctx)
	if err != nil {
		return err
	}
	cpu0, err := ctrl.cpuSeconds()
	if err != nil {
		return err
	}
	cm0, err := ctrl.scrape(ctx)
	if err != nil {
		return err
	}
	busy0, total0, err := machineCPU()
	if err != nil {
		return err
	}
	m0, start := markOwned(pool), time.Now()
	poolClock.begin(start)
	if err := b.scaleOwnedPool(ctx, p.pool, ownedPoolSize); err != nil {
		return err
	}
	if err := b.waitOwnedManaged(ctx, p.pool, ownedPoolSize); err != nil {
		return fmt.Errorf("growing to %d: %w; boots %+v", ownedPoolSize, err, fleet.Results())
	}
	grew := time.Since(start)
	api1, err := b.env.apiserverMetrics(ctx)
	if err != nil {
		return err
	}
	claimWrites, claimConflicts := updatesBetween(api0, api1, "inventories", "")
	statusWrites, statusConflicts := updatesBetween(api0, api1, "instances", "status")
	cm1, err := ctrl.scrape(ctx)
	if err != nil {
		return err
	}
	waited, waitedFor := clientWait(cm0, cm1)
	b.log.Infof("owned pool on %s, grow: apiserver requests %s; the controller's client-side wait by verb: %s",
		p.title, requestsByKind(api0, api1), clientWaitByVerb(cm0, cm1))
	cpu1, err := ctrl.cpuSeconds()
	if err != nil {
		return err
	}
	busy1, total1, err := machineCPU()
	if err != nil {
		return err
	}
	grow := tallySince(pool, m0)
	b.logSince(p.protocol+"-grow", pool, m0)

	m1 := markOwned(pool)
	if err := b.shrinkOwnedPool(ctx, p.pool, pool, ownedPoolKeep); err != nil {
		return err
	}
	shrink := tallySince(pool, m1)
	b.logSince(p.protocol+"-shrink-to-5", pool, m1)
	m2 := markOwned(pool)
	if err := b.shrinkOwnedPool(ctx, p.pool, pool, 0); err != nil {
		return err
	}
	empty := tallySince(pool, m2)
	b.logSince(p.protocol+"-shrink-to-0", pool, m2)

	b.writeTimeline(p.protocol, floorClock, poolClock)

	on := "9. Owned pool on " + p.title
	floorPhases, poolPhases := floorClock.phases(), poolClock.phases()
	*phases = append(*phases, phaseRow(p.title, "floor, 1 server", floor, floorPhases, "–", "–"),
		phaseRow(p.title, fmt.Sprintf("pool of %d", ownedPoolSize), grew, poolPhases, fmt.Sprintf("%.0f (%.0f refused); %.0f (%.0f refused); %.0f requests, %.2f s", claimWrites, claimConflicts,
			statusWrites, statusConflicts, waited, waitedFor), fmt.Sprintf("%.1f s; machine %.0f%% busy", cpu1-cpu0, 100*(busy1-busy0)/(total1-total0))))
	res.rows = append(res.rows,
		ownedRow(on, fmt.Sprintf("grow 0 → %d", ownedPoolSize), grow, ownedPoolSize, p.leastToGrow()),
		ownedRow(on, fmt.Sprintf("shrink %d → %d", ownedPoolSize, ownedPoolKeep), shrink, ownedPoolSize-ownedPoolKeep, 1),
		ownedRow(on, fmt.Sprintf("shrink %d → 0", ownedPoolKeep), empty, ownedPoolKeep, 1),
		row{figure: fmt.Sprintf("%s: time to all %d joined", on, ownedPoolSize),
			result: fmt.Sprintf("**%s** scale-up → all managed; floor (one server alone, 0 → 1) %s → **%.2f×**",
				seconds(grew), seconds(floor), grew.Seconds()/floor.Seconds()),
			target: "measured against the floor", verdict: verdictInfo})
	for _, s := range []struct {
		step string
		t    ownedTally
	}{{"grow 0 → 20", grow}, {"shrink 20 → 5", shrink}, {"shrink 5 → 0", empty}} {
		// Redfish has no datagrams; ipmi_sim's trace shows no Close Session.
		logouts, datagrams := strconv.Itoa(s.t.logouts), "–"
		if p.protocol == "ipmi" {
			logouts, datagrams = "–", strconv.Itoa(s.t.datagrams)
		}
		res.details = append(res.details, fmt.Sprintf("| %s | %s | %d | %d | %d | %d / %d | %d | %d | %s | %d | %s | %d |", p.title, s.step,
			s.t.bootOverride, s.t.powerOn, s.t.powerOff, s.t.insertMedia, s.t.ejectMedia, s.t.otherCommand, s.t.logins, logouts, s.t.reads, datagrams, s.t.most))
	}
	b.log.Infof("owned pool on %s: grew in %s (floor %s), grow %+v, shrink %+v, empty %+v; phases of the floor: %s; of the pool: %s",
		p.title, grew, floor, grow, shrink, empty, describePhases(floorPhases), describePhases(poolPhases))
	return nil
}

// ownedRow compares a step's BMC commands per server with the minimum.
func ownedRow(on, step string, t ownedTally, servers, least int) row {
	per := float64(t.commands()) / float64(servers)
	verdict := verdictPass
	if t.commands() > servers*least || t.most > 1 {
		verdict = verdictMiss
	}
	return row{figure: on + ", " + step + ": BMC commands per server",
		result: fmt.Sprintf("%.2f vs minimum %d → **%.2f×** (boot override %.2f, power on %.2f, power off %.2f, insert media %.2f, "+
			"eject media %.2f, other %.2f); %.2f sessions, %.1f reads per server; most sessions at once on a BMC %d",
			per, least, per/float64(least), perServer(t.bootOverride, servers), perServer(t.powerOn, servers),
			perServer(t.powerOff, servers), perServer(t.insertMedia, servers), perServer(t.ejectMedia, servers),
			perServer(t.otherCommand, servers), perServer(t.logins, servers),
			perServer(t.reads, servers), t.most),
		target: fmt.Sprintf("%d command(s) per server, 1 session at once", least), verdict: verdict}
}

func perServer(n, servers int) float64 { return float64(n) / float64(servers) }

// ownedFloor grows a pool of the one floor server 0 → 1 and times it to
// managed, then empties it.
func (b *bench) ownedFloor(ctx context.Context, pool string, s *ownedServer, clock *phaseClock) (time.Duration, error) {
	if err := b.createOwnedPool(ctx, pool, 0); err != nil {
		return 0, err
	}
	start := time.Now()
	clock.begin(start)
	if err := b.scaleOwnedPool(ctx, pool, 1); err != nil {
		return 0, err
	}
	if err := b.waitOwnedManaged(ctx, pool, 1); err != nil {
		return 0, err
	}
	took := time.Since(start)
	return took, b.shrinkOwnedPool(ctx, pool, []*ownedServer{s}, 0)
}

func (b *bench) createOwnedPool(ctx context.Context, name string, count int32) error {
	p := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Count = count
	p.Spec.Servers = &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: map[string]string{ownedPoolLabel: name}}}
	if _, err := b.env.client.EquinixV1().InstancePools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pool %s: %w", name, err)
	}
	return nil
}

func (b *bench) scaleOwnedPool(ctx context.Context, name string, count int32) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := b.env.client.EquinixV1().InstancePools().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		p.Spec.Count = count
		_, err = b.env.client.EquinixV1().InstancePools().Update(ctx, p, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// poolInstances are the watched Instances of a pool.
func (b *bench) poolInstances(pool string) []*equinixv1.Instance {
	var out []*equinixv1.Instance
	for _, i := range b.env.instanceList() {
		if i.Labels[equinixv1.LabelPool] == pool {
			out = append(out, i)
		}
	}
	return out
}

func (b *bench) waitOwnedManaged(ctx context.Context, pool string, count int) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, ownedPoolWait, true, func(context.Context) (bool, error) {
		insts := b.poolInstances(pool)
		if len(insts) != count {
			return false, nil
		}
		for _, i := range insts {
			if i.Status.Status != equinixv1.PhaseManaged {
				return false, nil
			}
		}
		return true, nil
	})
}

// shrinkOwnedPool scales the pool to keep and waits until it released the
// rest: its Instances gone, only keep servers claimed, the others off.
func (b *bench) shrinkOwnedPool(ctx context.Context, pool string, servers []*ownedServer, keep int32) error {
	if err := b.scaleOwnedPool(ctx, pool, keep); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, ownedPoolWait, true, func(ctx context.Context) (bool, error) {
		if len(b.poolInstances(pool)) != int(keep) {
			return false, nil
		}
		n, err := b.claimed(ctx, servers)
		if err != nil || n != int(keep) {
			return false, nil
		}
		off := 0
		for _, s := range servers {
			if s.bmc.off() {
				off++
			}
		}
		return off == len(servers)-int(keep), nil
	})
	if err != nil {
		return fmt.Errorf("shrinking %s to %d: %w", pool, keep, err)
	}
	return nil
}
