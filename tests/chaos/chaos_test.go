package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Bounds of the quiesce. They are generous: a healthy run settles in
// seconds, and a run that needs them has found something.
const (
	settleTimeout  = 2 * time.Minute
	releaseTimeout = 3 * time.Minute
	sweepTimeout   = time.Minute
)

// labelSeed marks the pools of a run.
const labelSeed = "chaos.harvesterhci.io/seed"

// TestChaos runs CHAOS_RUNS runs (default 2) with seeds CHAOS_SEED (default 1)
// onwards. `CHAOS_RUNS=500 make chaos` is the long campaign.
func TestChaos(t *testing.T) {
	runs := envInt(t, "CHAOS_RUNS", 2)
	first := envInt(t, "CHAOS_SEED", 1)
	require.GreaterOrEqual(t, first, int64(0), "CHAOS_SEED must not be negative (pool names carry it)")
	shared.Require(t)
	// Build the binary before the first run's clock starts.
	framework.Binary(t)
	var failed []string
	start := time.Now()
	for seed := first; seed < first+runs; seed++ {
		if !t.Run("seed="+strconv.FormatInt(seed, 10), func(t *testing.T) { runChaos(t, seed) }) {
			failed = append(failed, strconv.FormatInt(seed, 10))
		}
	}
	t.Logf("campaign: %d runs from seed %d in %s; failed seeds: [%s]", runs, first, time.Since(start).Round(time.Second), strings.Join(failed, " "))
}

func envInt(t *testing.T, name string, def int64) int64 {
	t.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	require.NoError(t, err, "%s=%q", name, raw)
	return v
}

func runChaos(t *testing.T, seed int64) {
	pl := newPlan(seed)
	t.Logf("chaos seed %d; replay with: CHAOS_SEED=%d CHAOS_RUNS=1 make chaos", seed, seed)
	t.Logf("plan: %s", pl)
	r := setUp(t, pl)
	t.Logf("owned plan: %s", r.owned.plan)
	begin := time.Now()
	r.chaos()
	chaosTook := time.Since(begin)
	r.quiesce()
	r.check()
	guestChanges := 0
	for _, g := range r.vip.guests {
		guestChanges += g.ledger.Changes()
	}
	t.Logf("seed %d: chaos %s, quiesce and checks %s (%s); %s; %s, %d refused creates; the VIP changed devices %d times, the guest Services' addresses %d times; %d violations",
		seed, chaosTook.Round(100*time.Millisecond), (time.Since(begin) - chaosTook).Round(100*time.Millisecond),
		r.phases, r.ledger.summary(), r.stats, r.creates.refusals(runPrefix(seed)), r.vip.ledger.Changes(), guestChanges, r.violations)
	t.Logf("seed %d: %s", seed, r.rolloutSummary)
	t.Logf("seed %d: %s", seed, r.bmcs.summary())
	t.Logf("seed %d: %s", seed, r.fencing.summary())
	t.Logf("seed %d: %s", seed, r.owned.summary())
	if n := r.remedied.Load(); n > 0 {
		t.Logf("seed %d: %d Instance(s) made in project B got a Secret of project B", seed, n)
	}
}

// run is one run's world and what it saw.
type run struct {
	t     *testing.T
	plan  plan
	env   *framework.Env
	addon *framework.Addon
	// hardware is the second install: the controller in the hardware mode,
	// serving the BMC world's Inventories; killed and started with addon.
	hardware *framework.Addon
	metal    metal.Client
	// metalB sees project B.
	metalB     metal.Client
	clusterTag string
	ledger     *ledger
	kills      *killSwitch
	passwords  *passwords
	foreign    foreign
	vip        vipWorld
	faults     map[int]metalsim.FaultID
	creates    *createLog
	power      *powerLedger
	// bmcs are the nodes with a BMC, and the BMC plan.
	bmcs *bmcWorld
	// fencing are the nodes the hardware controller fences, and their plan.
	fencing *fenceWorld
	// owned are the servers people own and the pools on them.
	owned *ownedWorld
	// remedied counts Instances pointed at project B's Secret.
	remedied atomic.Int64
	// running is whether the campaign believes the controller runs: false
	// after a kill action, until the next start.
	running bool
	began   time.Time
	// restartIn counts the steps until a controller killed inside a
	// notification starts again.
	restartIn int
	// marks and rollouts: when servers broke and the controller ran, and
	// the watch on the rollouts' bounds.
	marks    disturbances
	rollouts *rolloutWatch
	// rolloutFindings are the watch's violations, rolloutSummary what it
	// checked.
	rolloutFindings []string
	rolloutSummary  string
	phases          string
	stats           stats
	notes           []string
	violations      int
}

func setUp(t *testing.T, pl plan) *run {
	creates := &createLog{}
	env := framework.New(t, &shared, framework.Options{NoController: true, InstallTime: pl.InstallTime, WrapMetal: creates.wrap})
	removeLeftovers(t, env, "")
	removeElasticIPs(t, env)
	ns, err := env.Kube.CoreV1().Namespaces().Get(env.Ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	require.NoError(t, err)
	provider, err := metal.NewProvider(metal.Options{BaseURL: env.SimURL, RequestsPerSecond: -1})
	require.NoError(t, err)
	client, err := provider.Client(metal.Credentials{Token: framework.MetalToken, ProjectID: framework.ProjectID})
	require.NoError(t, err)
	r := &run{
		t: t, plan: pl, env: env, metal: client, clusterTag: equinixv1.ClusterTag(string(ns.UID)),
		faults: map[int]metalsim.FaultID{}, creates: creates,
	}
	r.setUpProjects()
	r.metalB, err = provider.Client(metal.Credentials{Token: projectBToken, ProjectID: projectB})
	require.NoError(t, err)
	r.ledger = newLedger(r.clusterTag, pl.projectBPools())
	t.Cleanup(env.Sim.Subscribe(r.ledger.observe))
	r.power = newPowerLedger()
	t.Cleanup(env.Sim.Subscribe(r.power.observe(r.clusterTag)))
	r.power.watchNodes(env)
	// The join agent completes the maintenance the controller asks for;
	// what it stored counts from its write, whatever the watch delivers.
	env.Agent.ObserveMaintenance(func(n *corev1.Node) { r.power.saw(n, time.Now()) })
	t.Cleanup(func() { env.Agent.ObserveMaintenance(nil) })
	r.foreign = createForeign(t, env, client, pl)
	r.bmcs = startBMCs(t, env, pl.Seed)
	r.fencing = startFencing(t, env, pl.Seed)
	r.owned = startOwned(t, env, pl.Seed)
	r.setUpVIP()
	r.addon = framework.StartAddon(t, env, framework.AddonOptions{ExtraArgs: append([]string{
		"--elastic-ip-resync-interval", "5s",
		"--metal-timeout", metalTimeout.String(),
		// Orphans are swept during the quiesce. A correct controller leaves
		// none, so the short grace period endangers no create in flight.
		"--orphan-sweep-interval", "1s", "--orphan-grace-period", "3s", "--orphan-dry-run=false",
	}, hardwareArgs...)})
	r.hardware = framework.StartAddon(t, env, framework.AddonOptions{Mode: config.ModeSeeder, OwnedPools: true,
		ExtraArgs: append(append(append([]string(nil), bmcArgs...), r.fencing.args()...), r.owned.args()...)})
	r.running = true
	r.marks.started()
	r.kills = &killSwitch{addon: r.addon, hardware: r.hardware, clusterTag: r.clusterTag, marks: &r.marks, vip: &vipHolder{}}
	t.Cleanup(env.Sim.Subscribe(r.kills.observe))
	r.passwords = watchPasswords(env)
	r.passwords.remember(bmcPassword)
	t.Cleanup(r.tearDown)
	return r
}

// chaos runs the plan's steps.
func (r *run) chaos() {
	r.began = time.Now()
	r.rollouts = watchRollouts(r, &r.marks)
	stopBMCs, bmcsDone := make(chan struct{}), make(chan struct{})
	fencingDone, ownedDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(bmcsDone)
		r.bmcs.play(r, stopBMCs)
	}()
	go func() {
		defer close(fencingDone)
		r.fencing.play(r, stopBMCs)
	}()
	go func() {
		defer close(ownedDone)
		r.owned.play(r, stopBMCs)
	}()
	defer func() {
		close(stopBMCs)
		<-bmcsDone
		<-fencingDone
		<-ownedDone
		r.notes = append(r.notes, r.bmcs.notes...)
		r.notes = append(r.notes, r.fencing.fenceNotes()...)
		r.notes = append(r.notes, r.owned.notes...)
	}()
	for i, s := range r.plan.Steps {
		// The random delay between actions is part of the plan, not a wait
		// for a state.
		select {
		case <-time.After(s.Delay):
		case <-r.env.Ctx.Done():
			return
		}
		r.restartAfterTriggeredKill()
		r.note(i, s, r.do(i, s))
	}
}

// noticeTriggeredKill records a kill inside a notification.
func (r *run) noticeTriggeredKill() {
	what, down := r.kills.takeFired()
	if what == "" {
		return
	}
	r.stats.triggered++
	r.running = false
	r.restartIn = down
	r.notes = append(r.notes, fmt.Sprintf("%6.2fs killed inside a notification: %s", time.Since(r.began).Seconds(), what))
}

// restartAfterTriggeredKill starts the controller again once it stayed down
// for the steps its trigger said.
func (r *run) restartAfterTriggeredKill() {
	r.noticeTriggeredKill()
	if r.restartIn == 0 {
		return
	}
	r.restartIn--
	if r.restartIn == 0 {
		r.notes = append(r.notes, fmt.Sprintf("%6.2fs restart after the kill: %s", time.Since(r.began).Seconds(), r.ensureController()))
	}
}

func (r *run) note(i int, s step, outcome string) {
	line := fmt.Sprintf("%6.2fs %d %s", time.Since(r.began).Seconds(), i, s)
	if outcome != "" {
		line += ": " + outcome
	}
	r.notes = append(r.notes, line)
}

// stats count the chaos a run actually caused.
type stats struct {
	kills, triggered, faultsFired, apiRestarts, oobDeletes, nodeFlaps, eventsForwarded int
	powerRequests, powerActions                                                        int
}

func (s stats) String() string {
	return fmt.Sprintf("%d kills (%d inside notifications), %d faults fired, %d apiserver restarts, %d out-of-band deletes, %d node flaps, "+
		"%d device events forwarded, %d power requests, %d power actions carried out",
		s.kills+s.triggered, s.triggered, s.faultsFired, s.apiRestarts, s.oobDeletes, s.nodeFlaps, s.eventsForwarded, s.powerRequests, s.powerActions)
}

// violation reports a broken invariant.
func (r *run) violation(format string, args ...interface{}) {
	r.t.Helper()
	r.violations++
	r.t.Errorf("INVARIANT (seed %d): "+format, append([]interface{}{r.plan.Seed}, args...)...)
}

// ensureController starts the controller unless it runs, and reports a
// controller that died without being killed.
func (r *run) ensureController() string {
	r.kills.suspend(true)
	defer r.kills.suspend(false)
	r.noticeTriggeredKill()
	r.restartIn = 0
	for _, a := range []*framework.Addon{r.addon, r.hardware} {
		if r.running && !healthy(a) {
			r.violation("the controller exited on its own (the campaign did not kill it); log tail:\n%s", tail(a.Log(), 40))
			a.Kill() // reaps it, so that it can start again
		}
		a.EnsureRunning()
	}
	was := r.running
	r.running = true
	if !was {
		r.marks.started()
	}
	if was {
		return "running"
	}
	return "started"
}

// tearDown leaves the shared cluster clean for the next run, whatever this
// one did: the controller stops first, so nothing acts on what is removed.
func (r *run) tearDown() {
	if r.rollouts != nil {
		r.rollouts.finish()
	}
	r.passwords.all()
	r.addon.Stop()
	r.hardware.Stop()
	if r.t.Failed() || os.Getenv("CHAOS_VERBOSE") != "" {
		r.t.Logf("actions of seed %d:\n%s", r.plan.Seed, strings.Join(r.notes, "\n"))
		r.t.Logf("controller log tail:\n%s", tail(r.addon.Log(), 60))
		r.t.Logf("hardware controller log tail:\n%s", tail(r.hardware.Log(), 30))
		r.keepLog()
	}
	removeLeftovers(r.t, r.env, runPrefix(r.plan.Seed))
	r.foreign.remove(r.env)
	r.bmcs.remove(r.env)
	r.fencing.remove(r.env)
	r.owned.remove(r.t, r.env)
	ctx := context.Background()
	for _, ns := range []string{metav1.NamespaceDefault, framework.Namespace} {
		// Events of finished runs would only slow down every later scan.
		_ = r.env.Kube.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
}

// keepLog copies the controller's whole log (every restart of this run) to
// $CHAOS_LOG_DIR/seed-N.log: a 60-line tail rarely reaches back to the
// moment a violation was caused.
func (r *run) keepLog() {
	dir := os.Getenv("CHAOS_LOG_DIR")
	if dir == "" {
		return
	}
	path := filepath.Join(dir, fmt.Sprintf("seed-%d.log", r.plan.Seed))
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.WriteFile(path, []byte(r.addon.Log()+"\n=== the hardware mode's controller\n"+r.hardware.Log()), 0o644)
	}
	if err != nil {
		r.t.Logf("could not keep the controller log: %v", err)
		return
	}
	r.t.Logf("controller log of seed %d: %s", r.plan.Seed, path)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
