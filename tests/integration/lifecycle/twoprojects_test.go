package lifecycle

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Project B of the two-project test, with the Secret its pool names.
const (
	projectBToken   = "sim-metal-token-project-b-61c2"
	projectBRotated = "sim-metal-token-project-b-rotated-0a9f"
	projectB        = "bbbbbbbb-1111-4222-8333-444444444444"
	projectBSecret  = "metal-project-b"
)

// projectGate sits in front of the simulator: it refuses revoked tokens
// with the API's 401 and records which token was used on which project's
// paths, so a token used on another project's objects is seen.
type projectGate struct {
	next    http.Handler
	mu      sync.Mutex
	revoked map[string]bool
	// uses maps a token to the project IDs in the paths it was used on.
	uses map[string]map[string]int
	// after counts the uses of each token since it was revoked.
	after map[string]int
}

func newProjectGate(next http.Handler) *projectGate {
	return &projectGate{next: next, revoked: map[string]bool{}, uses: map[string]map[string]int{}, after: map[string]int{}}
}

func (g *projectGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok := r.Header.Get("X-Auth-Token")
	g.mu.Lock()
	if g.uses[tok] == nil {
		g.uses[tok] = map[string]int{}
	}
	if _, rest, ok := strings.Cut(r.URL.Path, "/projects/"); ok {
		g.uses[tok][strings.SplitN(rest, "/", 2)[0]]++
	}
	refuse := g.revoked[tok]
	if refuse {
		g.after[tok]++
	}
	g.mu.Unlock()
	if refuse {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"Invalid authentication token"}`))
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *projectGate) revoke(tok string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revoked[tok] = true
}

func (g *projectGate) usedSinceRevoked(tok string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.after[tok]
}

// projectsOf lists the projects a token was used on.
func (g *projectGate) projectsOf(tok string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for p := range g.uses[tok] {
		out = append(out, p)
	}
	return out
}

// Two pools on two credentials Secrets, in two projects, at once: each
// server is made in its pool's project with its pool's token, the sweep
// lists (and cleans) each project with its own token, a token revoked in
// one project stops only that pool, and rotating it while the other pool
// provisions disturbs neither.
func TestTwoPoolsInTwoProjects(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	env.Sim.AddProject(projectBToken, projectB)
	gate := newProjectGate(env.Sim.Handler())
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	envApply(t, env, projectBSecret, map[string]string{
		credentials.TokenKey: projectBToken, credentials.ProjectKey: projectB, "JOIN_TOKEN": framework.JoinToken})
	env.StartController(env.Config(framework.Options{Configure: func(c *config.Config) {
		c.MetalAPIURL = srv.URL + "/metal/v1"
		c.OrphanSweepInterval, c.OrphanGracePeriod, c.OrphanDryRun = 300*time.Millisecond, 2*time.Second, false
	}}))

	a := framework.ParsePool(t, framework.SeedSample, "proj-a")
	a.Spec.Count = 2
	b := framework.ParsePool(t, framework.SeedSample, "proj-b")
	b.Spec.Count = 2
	b.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: projectBSecret}
	env.CreatePool(a)
	env.CreatePool(b)
	env.WaitPoolReady(a.Name, 2, 2*time.Minute)
	env.WaitPoolReady(b.Name, 2, 2*time.Minute)
	assertProjects(t, env, a.Name, framework.ProjectID, projectB)
	assertProjects(t, env, b.Name, projectB, framework.ProjectID)

	// Each project is swept with its own token: an orphan of this cluster
	// in each goes.
	clusterTag := clusterTagOf(t, env)
	orphanA := plantOrphan(t, env.MetalClient(framework.MetalToken, framework.ProjectID), clusterTag, "orphan-a")
	orphanB := plantOrphan(t, env.MetalClient(projectBToken, projectB), clusterTag, "orphan-b")
	waitDeviceGone(t, env, orphanA, "the orphan in project A was not swept")
	waitDeviceGone(t, env, orphanB, "the orphan in project B was not swept")

	// Project B's token is revoked: pool B stops and says so, pool A and
	// the sweep of project A go on.
	gate.revoke(projectBToken)
	scale(t, env, a.Name, 3)
	scale(t, env, b.Name, 3)
	waitPoolCondition(t, env, b.Name, equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid)
	env.WaitPoolReady(a.Name, 3, 2*time.Minute)
	orphanA = plantOrphan(t, env.MetalClient(framework.MetalToken, framework.ProjectID), clusterTag, "orphan-a2")
	waitDeviceGone(t, env, orphanA, "the sweep of project A stopped while project B's token was refused")
	assert.Len(t, env.Sim.Devices(projectB), 2, "a device was made in project B with its token revoked")

	// Rotated while pool A provisions a fourth server: both pools end ready.
	created := make(chan struct{})
	var once sync.Once
	t.Cleanup(env.Sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceCreated && n.ProjectID == framework.ProjectID {
			once.Do(func() { close(created) })
		}
	}))
	scale(t, env, a.Name, 4)
	waitClosed(t, created, time.Minute, "pool A's fourth device")
	env.Sim.AddProject(projectBRotated, projectB)
	envUpdate(t, env, projectBSecret, map[string]string{
		credentials.TokenKey: projectBRotated, credentials.ProjectKey: projectB, "JOIN_TOKEN": framework.JoinToken})
	env.WaitPoolReady(b.Name, 3, 2*time.Minute)
	env.WaitPoolReady(a.Name, 4, 2*time.Minute)
	refusedBefore := gate.usedSinceRevoked(projectBToken)
	assert.Never(t, func() bool { return gate.usedSinceRevoked(projectBToken) > refusedBefore }, 2*time.Second, 100*time.Millisecond,
		"the revoked token is still used after the rotation")
	assertProjects(t, env, a.Name, framework.ProjectID, projectB)
	assertProjects(t, env, b.Name, projectB, framework.ProjectID)

	// No token was ever used on the other project's paths.
	assert.ElementsMatch(t, []string{framework.ProjectID}, gate.projectsOf(framework.MetalToken))
	assert.ElementsMatch(t, []string{projectB}, gate.projectsOf(projectBToken))
	assert.ElementsMatch(t, []string{projectB}, gate.projectsOf(projectBRotated))
	env.AssertNoSecretLeaks()
	env.AssertAbsent(projectBToken, projectBRotated)
}

// assertProjects checks that every server of the pool lives in project and
// says so, and that no device of the pool is in other.
func assertProjects(t *testing.T, env *framework.Env, pool, project, other string) {
	t.Helper()
	devices := map[string]bool{}
	for _, d := range env.Sim.Devices(project) {
		devices[d.GetId()] = true
	}
	for _, i := range env.Instances(pool) {
		assert.Equal(t, project, i.Status.ProjectID, "instance %s", i.Name)
		assert.True(t, devices[i.Status.InstanceID], "instance %s: device %s is not in project %s", i.Name, i.Status.InstanceID, project)
	}
	for _, d := range env.Sim.Devices(other) {
		assert.False(t, strings.HasPrefix(d.GetHostname(), pool+"-"), "device %s of pool %s is in project %s", d.GetId(), pool, other)
	}
}

func plantOrphan(t *testing.T, client metal.Client, clusterTag, hostname string) string {
	t.Helper()
	dev, err := client.CreateDevice(t.Context(), metal.CreateDeviceRequest{
		Hostname: hostname, Plan: "c3.small.x86", Metro: "sg", BillingCycle: "hourly",
		OperatingSystem: "custom_ipxe", IPXEScriptURL: "http://example.invalid/x.ipxe",
		Tags: []string{clusterTag, equinixv1.PoolTag("gone-" + hostname)},
	})
	require.NoError(t, err)
	return dev.ID
}

func waitDeviceGone(t *testing.T, env *framework.Env, id, msg string) {
	t.Helper()
	env.Eventually(func() bool {
		_, ok := env.Sim.Device(id)
		return !ok
	}, time.Minute, "%s", msg)
}

// envUpdate replaces the data of a Secret envApply created.
func envUpdate(t *testing.T, env *framework.Env, name string, data map[string]string) {
	t.Helper()
	sec, err := env.Kube.CoreV1().Secrets(framework.Namespace).Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data = map[string][]byte{}
	for k, v := range data {
		sec.Data[k] = []byte(v)
	}
	_, err = env.Kube.CoreV1().Secrets(framework.Namespace).Update(env.Ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
}
