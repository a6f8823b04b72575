package lifecycle

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

func secretData(token string) map[string]string {
	return map[string]string{
		credentials.TokenKey: token, credentials.ProjectKey: framework.ProjectID, "JOIN_TOKEN": framework.JoinToken,
	}
}

// startController starts the in-process controller after the test has set
// the cluster up, so that its caches begin with that state (no race between
// a change and the first reconcile of a pool).
func startController(env *framework.Env) {
	env.StartController(env.Config(framework.Options{}))
}

// waitCondition waits until the pool's condition has the status and reason.
func waitPoolCondition(t *testing.T, env *framework.Env, pool, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	ok := assert.Eventually(t, func() bool {
		c = poolCondition(env, pool, condType)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
	}, time.Minute, 100*time.Millisecond, "pool %s: %s never became %s/%s", pool, condType, status, reason)
	if !ok {
		env.Dump(pool)
		t.FailNow()
	}
	return c
}

// waitInstanceCondition waits until the pool's (single) Instance has the
// condition and returns that version.
func waitInstanceCondition(t *testing.T, env *framework.Env, pool, condType string, status metav1.ConditionStatus, reason string) equinixv1.Instance {
	t.Helper()
	var inst equinixv1.Instance
	ok := assert.Eventually(t, func() bool {
		for _, i := range env.Instances(pool) {
			if hasCondition(&i, condType, status, reason) {
				inst = i
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "no instance of %s with %s=%s/%s", pool, condType, status, reason)
	if !ok {
		env.Dump(pool)
		t.FailNow()
	}
	return inst
}

func assertWarning(t *testing.T, env *framework.Env, name, reason string) {
	t.Helper()
	var ev *corev1.Event
	env.Eventually(func() bool { ev = event(env, name, reason); return ev != nil }, 30*time.Second, "no %s Event on %s", reason, name)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type, "Event %s on %s", reason, name)
}

// assertNoMetalDevices checks that nothing was created in Equinix Metal.
func assertNoMetalDevices(t *testing.T, env *framework.Env) {
	t.Helper()
	assert.Empty(t, env.Sim.Devices(framework.ProjectID), "a device exists")
	assert.Empty(t, env.Sim.RequestsFor(metalsim.OpCreateDevice), "a device create was sent")
}

// A missing credentials Secret stops the pool before any Metal call, says
// which Secret on the pool and the Instance, and creating it is enough.
func TestMissingSecretThenCreated(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	require.NoError(t, env.Kube.CoreV1().Secrets(framework.Namespace).Delete(env.Ctx, framework.SecretName, metav1.DeleteOptions{}))
	startController(env)
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "no-secret"))

	c := waitPoolCondition(t, env, pool.Name, equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsMissing)
	assert.Contains(t, c.Message, framework.Namespace+"/"+framework.SecretName)
	assertWarning(t, env, pool.Name, equinixv1.ReasonCredentialsMissing)
	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonSecretNotFound)
	assert.Contains(t, framework.Condition(&inst, equinixv1.InstanceCredentialsReady).Message, framework.Namespace+"/"+framework.SecretName)
	assertWarning(t, env, inst.Name, equinixv1.ReasonSecretNotFound)
	assert.Empty(t, env.Sim.Requests(), "a Metal call was made without credentials")

	env.SetSecretData(secretData(framework.MetalToken))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	assert.Equal(t, metav1.ConditionTrue, poolCondition(env, pool.Name, equinixv1.PoolCredentialsReady).Status)
	recovered := env.Instances(pool.Name)
	require.Len(t, recovered, 1)
	assert.Equal(t, inst.Name, recovered[0].Name, "the Instance was replaced instead of recovering")
	assert.True(t, hasCondition(&recovered[0], equinixv1.InstanceCredentialsReady, metav1.ConditionTrue, equinixv1.ReasonCredentialsReady))
	assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonCredentialsReady), "no Event for the recovery")
	env.AssertNoSecretLeaks()
}

// A token Equinix refuses (401) is reported on the Instance with a Warning
// and summarized on the pool; fixing the Secret recovers without a restart.
func TestInvalidTokenThenFixed(t *testing.T) {
	const wrong = "sim-wrong-token-0b7e41"
	env := framework.New(t, &shared, framework.Options{NoController: true})
	env.SetSecretData(secretData(wrong))
	startController(env)
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "bad-token"))

	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid)
	assert.Contains(t, framework.Condition(&inst, equinixv1.InstanceCredentialsReady).Message, framework.Namespace+"/"+framework.SecretName)
	assertWarning(t, env, inst.Name, equinixv1.ReasonCredentialsInvalid)
	waitPoolCondition(t, env, pool.Name, equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid)
	assertWarning(t, env, pool.Name, equinixv1.ReasonCredentialsInvalid)
	assertNoMetalDevices(t, env)
	for _, r := range env.Sim.Requests() {
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s %s", r.Method, r.Path)
	}

	env.SetSecretData(secretData(framework.MetalToken))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	assert.Equal(t, metav1.ConditionTrue, poolCondition(env, pool.Name, equinixv1.PoolCredentialsReady).Status)
	recovered := env.Instances(pool.Name)
	require.Len(t, recovered, 1)
	assert.Equal(t, inst.Name, recovered[0].Name, "the Instance was replaced instead of recovering")
	assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonCredentialsReady), "no Event for the recovery")
	env.AssertNoSecretLeaks()
	env.AssertAbsent(wrong)
}

// tokenGate sits in front of the simulator and refuses revoked tokens with
// the API's 401, which the simulator itself cannot do (its tokens are
// forever). It also records which tokens were used.
type tokenGate struct {
	next http.Handler

	mu       sync.Mutex
	used     map[string]int
	revoked  map[string]bool
	refusals int
}

func (g *tokenGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok := r.Header.Get("X-Auth-Token")
	g.mu.Lock()
	g.used[tok]++
	refuse := g.revoked[tok]
	if refuse {
		g.refusals++
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

func (g *tokenGate) uses(tok string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used[tok]
}

func (g *tokenGate) revoke(tok string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revoked[tok] = true
}

func (g *tokenGate) refused() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refusals
}

// Rotating the token while a server is being provisioned — new token added
// to the project, Secret updated, old token revoked — disturbs nothing: the
// Secret is read on every reconcile, so the old token is never used again.
func TestTokenRotationWhileProvisioning(t *testing.T) {
	const rotated = "sim-metal-token-rotated-5d21e"
	env := framework.New(t, &shared, framework.Options{NoController: true})
	gate := &tokenGate{next: env.Sim.Handler(), used: map[string]int{}, revoked: map[string]bool{}}
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	env.StartController(env.Config(framework.Options{Configure: func(c *config.Config) { c.MetalAPIURL = srv.URL + "/metal/v1" }}))
	insts := watchInstances(t, env)

	p := framework.ParsePool(t, framework.SeedSample, "rotate")
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)

	// Scale up and rotate as soon as the new server's device exists, so the
	// rotation lands in the middle of its provisioning chain.
	created := make(chan struct{})
	var once sync.Once
	t.Cleanup(env.Sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceCreated {
			once.Do(func() { close(created) })
		}
	}))
	scale(t, env, pool.Name, 2)
	waitClosed(t, created, time.Minute, "the second device")
	env.Sim.AddProject(rotated, framework.ProjectID)
	env.SetSecretData(secretData(rotated))
	env.Eventually(func() bool { return gate.uses(rotated) > 0 }, 30*time.Second, "the rotated token was never used")
	gate.revoke(framework.MetalToken)

	env.WaitPoolReady(pool.Name, 2, 90*time.Second)
	assert.Zero(t, gate.refused(), "the revoked token was used after the rotation")
	refusedSeen := insts.seen(func(i *equinixv1.Instance) bool {
		return hasCondition(i, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, "")
	})
	assert.Empty(t, refusedSeen, "an Instance reported bad credentials during the rotation")
	for _, i := range env.Instances(pool.Name) {
		assert.False(t, env.HasEvent(i.Name, equinixv1.ReasonCredentialsInvalid), "instance %s", i.Name)
	}
	assert.False(t, env.HasEvent(pool.Name, equinixv1.ReasonCredentialsInvalid))
	env.AssertNoSecretLeaks()
	env.AssertAbsent(rotated)
}

func scale(t *testing.T, env *framework.Env, name string, count int32) {
	t.Helper()
	env.EditPool(name, func(p *equinixv1.InstancePool) {
		p.Spec.Count = count
	})
}

// A token revoked while a server is provisioning (its device exists) stops
// the chain at its next Metal call with CredentialsInvalid on the Instance
// and the pool; a new token in the Secret lets the same device go on.
func TestTokenRevokedMidProvisionRecovers(t *testing.T) {
	const replacement = "sim-metal-token-replaced-93c0a"
	env := framework.New(t, &shared, framework.Options{NoController: true})
	gate := &tokenGate{next: env.Sim.Handler(), used: map[string]int{}, revoked: map[string]bool{}}
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	env.StartController(env.Config(framework.Options{Configure: func(c *config.Config) { c.MetalAPIURL = srv.URL + "/metal/v1" }}))
	l := newLedger(t, env)

	revoked := make(chan struct{})
	var once sync.Once
	t.Cleanup(env.Sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceCreated {
			once.Do(func() {
				gate.revoke(framework.MetalToken)
				close(revoked)
			})
		}
	}))
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "revoked"))
	waitClosed(t, revoked, time.Minute, "the device create")

	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid)
	assertWarning(t, env, inst.Name, equinixv1.ReasonCredentialsInvalid)
	waitPoolCondition(t, env, pool.Name, equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid)
	require.NotEmpty(t, inst.Status.InstanceID, "the device ID was not kept")

	env.Sim.AddProject(replacement, framework.ProjectID)
	env.SetSecretData(secretData(replacement))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	final := env.Instances(pool.Name)
	require.Len(t, final, 1)
	assert.Equal(t, inst.Name, final[0].Name, "the Instance was replaced instead of recovering")
	assert.Equal(t, inst.Status.InstanceID, final[0].Status.InstanceID)
	assert.Equal(t, []string{inst.Status.InstanceID}, l.devicesOf(string(inst.UID)))
	assert.Equal(t, metav1.ConditionTrue, poolCondition(env, pool.Name, equinixv1.PoolCredentialsReady).Status)
	env.AssertNoSecretLeaks()
	env.AssertAbsent(replacement)
}
