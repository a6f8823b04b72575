package vip

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// faultsOnEveryCall makes each call of a move fail once of each kind before
// it works: a 429, a 5xx before the request is applied, and for the writes
// a 5xx and a dropped connection after it was applied (the answer lost).
func faultsOnEveryCall() []metalsim.Fault {
	reads := []string{metalsim.OpFindIPAddressByID, metalsim.OpFindIPReservations, metalsim.OpFindDeviceByID}
	writes := []string{metalsim.OpDeleteIPAddress, metalsim.OpCreateIPAssignment}
	var out []metalsim.Fault
	for _, op := range append(slices.Clone(reads), writes...) {
		out = append(out,
			metalsim.Fault{Kind: metalsim.FaultRateLimit, Operations: []string{op}, Count: 1, RetryAfter: 300 * time.Millisecond},
			metalsim.Fault{Kind: metalsim.FaultServerError, Status: 502, Operations: []string{op}, Count: 1})
	}
	out = append(out,
		metalsim.Fault{Kind: metalsim.FaultServerError, Status: 500, AfterStore: true, Operations: []string{metalsim.OpDeleteIPAddress}, Count: 1},
		metalsim.Fault{Kind: metalsim.FaultDropConnection, AfterStore: true, Operations: []string{metalsim.OpCreateIPAssignment}, Count: 1})
	return out
}

// The cluster VIP's Elastic IP follows kube-vip's vipHost across three
// moves of the real binary: the first under a 429, a 5xx and a lost answer
// on each of its calls, the second with the binary SIGKILLed between the
// unassign and the assign, the third under faults again. The address is
// never on two devices, and the person's other addresses are untouched.
func TestVIPFollowsKubeVIPThroughFaultsAndSIGKILL(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	var addon *framework.Addon
	w := newWorldThen(t, env, "follow", 2, func() {
		addon = framework.StartAddon(t, env, framework.AddonOptions{ExtraArgs: []string{"--elastic-ip-resync-interval", "2s"}})
		env.DeleteElasticIPsAtEnd()
	})
	foreign := w.addForeign()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", tail(addon.Log(), 80))
		}
	})

	// The addon makes the VIP's ElasticIP itself: the VIP is in the project.
	env.Eventually(func() bool { return env.ElasticIP(equinixv1.VIPElasticIPName) != nil }, time.Minute, "no ElasticIP for the VIP")
	eip := env.ElasticIP(equinixv1.VIPElasticIPName)
	assert.Equal(t, framework.VIP, eip.Spec.Address)
	assert.Equal(t, equinixv1.ElasticIPKeep, eip.Spec.DeletionPolicy)
	assert.Equal(t, equinixv1.ElasticIPForVIP, eip.Labels[equinixv1.LabelElasticIPFor])
	assert.True(t, env.EventRecorded(equinixv1.VIPElasticIPName, equinixv1.ReasonElasticIPCreated))
	w.follow(w.first, time.Minute)

	t.Run("move 1: a 429, a 5xx and a lost answer on every call", func(t *testing.T) {
		var ids []metalsim.FaultID
		for _, f := range faultsOnEveryCall() {
			ids = append(ids, env.Sim.InjectFault(f))
		}
		w.follow(w.servers[0], 2*time.Minute)
		for i, f := range faultsOnEveryCall() {
			// The reservation list is read only when the one known by ID
			// cannot be: its faults may stay unfired.
			if f.Operations[0] != metalsim.OpFindIPReservations {
				assert.Equal(t, 1, env.Sim.FaultFired(ids[i]), "fault %s on %s did not fire", f.Kind, f.Operations[0])
			}
			env.Sim.RemoveFault(ids[i])
		}
	})

	t.Run("move 2: SIGKILL between the unassign and the assign", func(t *testing.T) {
		from, to := w.devices[w.servers[0]], w.devices[w.servers[1]]
		killed := make(chan bool, 1)
		var once sync.Once
		stop := env.Sim.Subscribe(func(n metalsim.Notification) {
			if n.Type != metalsim.DeviceNetworkChanged || n.DeviceID != from || slices.ContainsFunc(n.Network.Addresses,
				func(a metalsim.Address) bool { return a.Address == framework.VIP }) {
				return
			}
			// Inside the unassign, before it is answered.
			once.Do(func() { killed <- addon.Kill() })
		})
		require.NoError(t, env.SetVIPHost(w.servers[1]))
		select {
		case ok := <-killed:
			require.True(t, ok, "the controller was not running")
		case <-time.After(time.Minute):
			t.Fatalf("the unassign never happened: %s", describe(w))
		}
		stop()
		assert.Empty(t, w.ledger.Holders(), "the VIP is nowhere between the unassign and the assign")
		stored := env.ElasticIP(equinixv1.VIPElasticIPName)
		require.NotNil(t, stored.Status.Move, "the move was stored before its first call")
		assert.Equal(t, to, stored.Status.Move.ToDevice)
		assert.Equal(t, from, stored.Status.Move.FromDevice)
		assert.Equal(t, equinixv1.ElasticIPPhaseMoving, stored.Status.Status)

		addon.Start()
		w.waitOn(w.servers[1], time.Minute)
	})

	t.Run("move 3: back to the first node under faults", func(t *testing.T) {
		for _, f := range faultsOnEveryCall() {
			id := env.Sim.InjectFault(f)
			t.Cleanup(func() { env.Sim.RemoveFault(id) })
		}
		w.follow(w.first, 2*time.Minute)
	})

	w.noOverlap()
	foreign.check(w)
	// A move's Event is recorded once its status is stored, and written
	// asynchronously: the last one may land after waitOn saw the status.
	var moved []string
	backFirst := "to device " + w.firstDevice + " of node " + w.first
	if !assert.Eventually(t, func() bool {
		moved = w.events(equinixv1.ReasonMoved)
		return len(moved) >= 3 && strings.Contains(strings.Join(moved, "\n"), backFirst)
	}, 30*time.Second, 100*time.Millisecond, "an Event for every move, the last %s", backFirst) {
		t.Logf("Moved Events: %q", moved)
	}

	rows := columns(t, w, "elasticip")
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"NAME", "ADDRESS", "NODE", "DEVICE", "STATUS", "AGE"}, rows[0])
	assert.Equal(t, []string{equinixv1.VIPElasticIPName, framework.VIP, w.first, w.firstDevice, equinixv1.ElasticIPPhaseAssigned}, rows[1][:5])

	// The last move's metrics were published before its Event, waited
	// for above.
	families := scrape(t, addon.MetricsURL())
	assert.Equal(t, 1.0, value(families, "equinix_addon_elasticip_on_viphost"), "on the VIP holder")
	assert.GreaterOrEqual(t, value(families, "equinix_addon_elasticip_moves_total"), 2.0, "moves since the restart")
	assert.GreaterOrEqual(t, value(families, "equinix_addon_elasticip_move_duration_seconds"), 2.0)

	// Deleting the VIP's ElasticIP (deletion policy Keep) leaves the VIP
	// where it is; the addon makes it again, and it finds it in place.
	changes := w.ledger.Changes()
	require.NoError(t, env.Client.EquinixV1().ElasticIPs().Delete(env.Ctx, equinixv1.VIPElasticIPName, metav1.DeleteOptions{}))
	env.Eventually(func() bool {
		e := env.ElasticIP(equinixv1.VIPElasticIPName)
		return e != nil && e.DeletionTimestamp == nil && e.Status.Status == equinixv1.ElasticIPPhaseAssigned
	}, time.Minute, "the VIP's ElasticIP was not made again")
	assert.Equal(t, changes, w.ledger.Changes(), "no assignment changed")
	assert.Equal(t, []string{w.firstDevice}, w.ledger.Holders())
	addon.AssertNoSecretLeaks()
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// value sums a family's values (a histogram's sample count).
func value(families map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, m := range families[name].GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
