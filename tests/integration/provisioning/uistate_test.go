package provisioning

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rancher/wrangler/v3/pkg/summary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// badges collects what the Harvester UI would show for every version of the
// objects a watch delivers: wrangler's summary of each stored status.
type badges struct {
	mu   sync.Mutex
	seen map[string][]summary.Summary // by phase
	w    watch.Interface
}

func watchBadges(t *testing.T, w watch.Interface, phaseOf func(runtime.Object) string) *badges {
	b := &badges{seen: map[string][]summary.Summary{}, w: w}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			s := summary.Summarize(ev.Object)
			b.mu.Lock()
			b.seen[phaseOf(ev.Object)] = append(b.seen[phaseOf(ev.Object)], s)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return b
}

func (b *badges) of(phase string) []summary.Summary {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]summary.Summary(nil), b.seen[phase]...)
}

// TestHarvesterUIBadges watches every status the controller writes and reads
// it as the Harvester UI does: a server on its way shows as in progress, a
// managed one as active, a failed one as an error with its message; a pool
// likewise, and a pool without credentials as an error saying what to create.
func TestHarvesterUIBadges(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	iw, err := env.Client.EquinixV1().Instances().Watch(env.Ctx, metav1.ListOptions{})
	require.NoError(t, err)
	instBadges := watchBadges(t, iw, func(o runtime.Object) string { return o.(*equinixv1.Instance).Status.Status })
	pw, err := env.Client.EquinixV1().InstancePools().Watch(env.Ctx, metav1.ListOptions{})
	require.NoError(t, err)
	poolBadges := watchBadges(t, pw, func(o runtime.Object) string {
		p := o.(*equinixv1.InstancePool)
		return p.Name + "/" + p.Status.Status
	})

	// The first device fails to provision; its replacement joins.
	env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultProvisionFailure, Operations: []string{metalsim.OpCreateDevice}, Count: 1})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "badges"))
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	env.Eventually(func() bool { return len(instBadges.of(equinixv1.PhaseFailed)) > 0 }, 30*time.Second, "no failed Instance was seen")
	// The watch delivers the statuses in the order they were stored, and
	// may lag what the pool showed: once the managed one is here, every
	// status before it is too.
	env.Eventually(func() bool {
		seen := instBadges.of(equinixv1.PhaseManaged)
		return len(seen) > 0 && seen[len(seen)-1].State == "active" && !seen[len(seen)-1].Error
	}, 30*time.Second, "a managed Instance does not show as active: %+v", instBadges.of(equinixv1.PhaseManaged))

	// One pass takes a server from its create intent to the reinstall, whose
	// intent is written with the state it leads to (joining): installing and
	// networking are stored only when a pass ends in them, which it need not.
	for _, phase := range []string{equinixv1.PhasePending, equinixv1.PhaseProvisioning, equinixv1.PhaseNetworking, equinixv1.PhaseInstalling, equinixv1.PhaseJoining} {
		seen := instBadges.of(phase)
		if phase != equinixv1.PhaseNetworking && phase != equinixv1.PhaseInstalling {
			assert.NotEmpty(t, seen, "no Instance status in phase %s", phase)
		}
		for _, s := range seen {
			assert.True(t, s.Transitioning && !s.Error, "a %s Instance shows as %+v", phase, s)
		}
	}
	for _, s := range instBadges.of(equinixv1.PhaseFailed) {
		assert.True(t, s.Error, "a failed Instance shows as %+v", s)
		assert.Contains(t, strings.Join(s.Message, "; "), "could not provision")
	}
	for _, s := range poolBadges.of("badges/" + equinixv1.PoolPhaseProvisioning) {
		assert.True(t, s.Transitioning && !s.Error, "a provisioning pool shows as %+v", s)
	}
	env.Eventually(func() bool {
		seen := poolBadges.of("badges/" + equinixv1.PoolPhaseReady)
		return len(seen) > 0 && seen[len(seen)-1].State == "active"
	}, 30*time.Second, "a ready pool does not show as active")

	// A pool whose credentials Secret does not exist says so, as an error.
	lost := framework.ParsePool(t, framework.SeedSample, "no-credentials")
	lost.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: "nowhere"}
	env.CreatePool(lost)
	env.Eventually(func() bool {
		for _, s := range poolBadges.of("no-credentials/" + equinixv1.PoolPhasePending) {
			if s.Error && strings.Contains(strings.Join(s.Message, "; "), "nowhere") {
				return true
			}
		}
		return false
	}, 30*time.Second, "a pool without credentials is not shown as an error naming the Secret: %+v",
		poolBadges.of("no-credentials/"+equinixv1.PoolPhasePending))
}
