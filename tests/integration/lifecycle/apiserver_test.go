package lifecycle

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// A controller that starts while the kube-apiserver is down (a pod scheduled
// during a control-plane restart) waits for it, unready, and then works; it
// does not exit. Found by the fault campaign: a restart of the
// controller landed inside an apiserver restart and the process exited.
func TestStartsWhileTheAPIServerIsDown(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	env.Cluster.StopAPIServer()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			require.NoError(t, env.Cluster.StartAPIServer(env.Ctx))
		}
	})

	a := framework.StartAddon(t, env, framework.AddonOptions{})
	// Seven failed attempts take the start-up backoff past its 10s cap, where
	// a wait.ExponentialBackoff would have given up.
	require.Eventually(t, func() bool { return strings.Count(a.Log(), "waiting for the Kubernetes API") >= 7 },
		time.Minute, 100*time.Millisecond, "the controller should keep saying what it waits for:\n%s", a.Log())
	assert.Equal(t, http.StatusServiceUnavailable, readyz(t, a), "not ready while it cannot reach the apiserver")

	require.NoError(t, env.Cluster.StartAPIServer(env.Ctx))
	restarted = true
	require.Eventually(t, func() bool { return readyz(t, a) == http.StatusOK }, time.Minute, 100*time.Millisecond,
		"ready once the apiserver is back:\n%s", a.Log())

	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "late-apiserver"))
	env.WaitPoolReady(pool.Name, int(pool.Spec.Count), 2*time.Minute)
	a.AssertNoSecretLeaks()
}

func readyz(t *testing.T, a *framework.Addon) int {
	t.Helper()
	resp, err := http.Get(a.HealthURL("/readyz"))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Once the kinds are resolved, the factories' own lookups (lasso maps each
// controller's resource to its kind after the caches sync, to size its
// workers) need no apiserver. Found by the fault campaign: the
// apiserver restarted between the caches' sync and that lookup, and the
// process exited.
func TestResolvedKindsOutliveTheAPIServer(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	// The equinix mode's chains, registered and never started.
	ctx, cancel := context.WithCancel(env.Ctx)
	t.Cleanup(cancel)
	c, err := controller.Setup(ctx, env.Cluster.RESTConfig, env.Config(framework.Options{}))
	require.NoError(t, err)
	kinds, err := c.Watched()
	require.NoError(t, err)
	f := c.Factories
	require.NoError(t, f.ResolveKinds(kinds))

	env.Cluster.StopAPIServer()
	t.Cleanup(func() { require.NoError(t, env.Cluster.StartAPIServer(env.Ctx)) })
	clients := f.Equinix.ControllerFactory().SharedCacheFactory().SharedClientFactory()
	for _, gvr := range []schema.GroupVersionResource{
		equinixv1.SchemeGroupVersion.WithResource("instances"), equinixv1.SchemeGroupVersion.WithResource("instancepools"),
		corev1.SchemeGroupVersion.WithResource("nodes"), corev1.SchemeGroupVersion.WithResource("secrets"),
		corev1.SchemeGroupVersion.WithResource("configmaps"), harvesterv1beta1.SchemeGroupVersion.WithResource("settings"),
	} {
		_, err := clients.GVKForResource(gvr)
		assert.NoError(t, err, "%s with the apiserver away", gvr)
	}
}
