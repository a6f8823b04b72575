package bootendpoint

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

const (
	wait = 30 * time.Second
	// handover is the longest a killed leader's lease runs on (30 s),
	// and the next one's retry period, with room.
	handover = 60 * time.Second
	tick     = 100 * time.Millisecond
	// unknownMAC has no claim: the leader answers 404.
	unknownMAC = "52:54:00:29:00:01"
)

// listening is the binary's log line that names its boot endpoint's port.
var listening = regexp.MustCompile(`boot endpoint of the servers people own listens on (127\.0\.0\.1:\d+)`)

// answer is what a boot endpoint answered.
type answer struct {
	status int
	body   string
}

func ask(addr string) (answer, error) {
	resp, err := http.Get("http://" + addr + "/boot/ipxe?mac=" + unknownMAC)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(body)}, err
}

// bootAddress is where a started binary's boot endpoint listens.
func bootAddress(t *testing.T, addon *framework.Addon) string {
	t.Helper()
	var addr string
	require.Eventually(t, func() bool {
		m := listening.FindAllStringSubmatch(addon.Log(), -1)
		if len(m) == 0 {
			return false
		}
		addr = m[len(m)-1][1]
		return true
	}, wait, tick, "the boot endpoint never listened:\n%s", addon.Log())
	return addr
}

// Every replica answers the boot endpoint: a standby with no leader it can
// forward to answers 503 and counts it; with a leader it hands back the
// leader's own answer; once the leader is killed and it has taken the
// lease, it answers itself.
func TestEveryReplicaAnswersTheBootEndpoint(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, OwnedPools: true, NoController: true})
	lock := "boot-relay-" + fmt.Sprint(time.Now().UnixNano())
	holdLease(t, env, lock)
	opts := framework.AddonOptions{LeaderElect: true, LockName: lock, ExtraArgs: []string{"--owned-pools"}}

	first := framework.StartAddon(t, env, opts)
	firstAddr := bootAddress(t, first)
	got, err := ask(firstAddr)
	require.NoError(t, err, "a standby listens")
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "a holder without an address is no leader to forward to: %s", got.body)
	assert.Contains(t, metrics(t, first), `equinix_addon_boot_requests_refused_total{reason="BootNoLeader"} 1`)

	require.NoError(t, env.Kube.CoordinationV1().Leases(framework.Namespace).Delete(env.Ctx, lock, metav1.DeleteOptions{}))
	var leaders answer
	require.Eventually(t, func() bool {
		leaders, err = ask(firstAddr)
		return err == nil && leaders.status == http.StatusNotFound
	}, wait, tick, "the first replica never led:\n%s", first.Log())

	second := framework.StartAddon(t, env, opts)
	secondAddr := bootAddress(t, second)
	got, err = ask(secondAddr)
	require.NoError(t, err)
	assert.Equal(t, leaders, got, "the standby hands back the leader's answer")
	assert.Contains(t, metrics(t, first), `equinix_addon_boot_requests_refused_total{reason="BootNoOpenClaim"} 2`,
		"the leader judged both requests")
	assert.NotContains(t, metrics(t, second), `reason="BootNoOpenClaim"`, "the standby judged none")

	require.True(t, first.Kill())
	require.Eventually(t, func() bool {
		return strings.Contains(second.Log(), "the leader serves the boot endpoint")
	}, handover, tick, "the standby never took the lease:\n%s", second.Log())
	got, err = ask(secondAddr)
	require.NoError(t, err)
	assert.Equal(t, leaders, got, "the new leader answers as the old one did")
	assert.Contains(t, metrics(t, second), `equinix_addon_boot_requests_refused_total{reason="BootNoOpenClaim"} 1`,
		"and judges the request itself")
}

// holdLease makes a replica of an older release, whose identity names no
// address, the leader of lock for an hour.
func holdLease(t *testing.T, env *framework.Env, lock string) {
	t.Helper()
	holder, seconds, now := "harvester-seeder-addon-7d9f8-x2x4q_1", int32(3600), metav1.NewMicroTime(time.Now())
	_, err := env.Kube.CoordinationV1().Leases(framework.Namespace).Create(env.Ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: lock},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func metrics(t *testing.T, addon *framework.Addon) string {
	t.Helper()
	resp, err := http.Get(addon.MetricsURL())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
