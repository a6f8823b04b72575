package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// The Seeder world of a run: what Harvester's own Seeder leaves once its
// Addon is disabled, beside the other worlds' Inventories. Its Lease, no
// longer renewed (an hour old); the CRD of Tinkerbell's machines, which
// only Seeder installs; its admission webhook configuration, owned by its
// CA Secret; and its finalizer on Inventories it once served. A person
// brings Seeder's Service with a ready endpoint back and takes it away
// again (Seeder's pod coming and going), puts the webhook configuration
// back when it is gone (Seeder's webhook server applies it at start), and
// leaves Seeder's finalizer on Inventories. The configuration validates
// only Seeder's Clusters here, which nobody writes: nothing listens behind
// the Service, and the other worlds' Inventory writes must not wait on it;
// the addon judges a configuration by its owner and Service, not its rules.
// Invariants:
//   - the addon never deletes the configuration while its Service has a
//     ready endpoint: once the configuration was read present
//     seederServedSettle after the endpoint came (the addon's read of the
//     endpoints and its delete are a moment apart), it is present at every
//     later look until the endpoint goes (only the addon deletes it);
//   - no Seeder finalizer stays on an Inventory for seederFinalizerWithin
//     of the controller's running time while Seeder's Lease is stale (it
//     always is here);
//   - once the chaos ends, the orphaned configuration is gone within
//     seederOrphanWithin (the addon looks for Seeder every minute, and at
//     start).
const (
	seederServedSettle    = 3 * time.Second
	seederFinalizerWithin = 30 * time.Second
	seederOrphanWithin    = 90 * time.Second
	seederTick            = 700 * time.Millisecond
)

// seederWorld is the Seeder world's state, the person's and the judge's.
type seederWorld struct {
	rng   *rand.Rand
	marks *disturbances

	mu sync.Mutex
	// servedAt is when the Service got its ready endpoint (zero while it
	// has none); confirmed the configuration's UID read present
	// seederServedSettle after that, "" until then.
	servedAt  time.Time
	confirmed types.UID
	// finalizerSince is when each Inventory was first seen with Seeder's
	// finalizer in its current span, counted from the controller's start.
	finalizerSince map[string]time.Time
	quiescedAt     time.Time
	findings       []string
	notes          []string
	// Counts for the summary.
	served, applied, planted, removed, spans int
}

// startSeeder plants what Seeder leaves: run before the controllers start,
// which then find Seeder's leftovers at their first look.
func startSeeder(t *testing.T, env *framework.Env, seed int64, marks *disturbances) *seederWorld {
	t.Helper()
	w := &seederWorld{rng: rand.New(rand.NewSource(seed ^ 0x5eed)), marks: marks, finalizerSince: map[string]time.Time{}}
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(framework.SeederCRDDir(root), "bmc.tinkerbell.org_machines.yaml"))
	require.NoError(t, err)
	crd := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(raw, crd))
	ext, err := apiextclient.NewForConfig(env.Cluster.RESTConfig)
	require.NoError(t, err)
	_, err = ext.ApiextensionsV1().CustomResourceDefinitions().Create(env.Ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	leases := env.Kube.CoordinationV1().Leases(seederv1alpha1.SeederAddonNamespace)
	_ = leases.Delete(env.Ctx, seederv1alpha1.SeederLeaseName, metav1.DeleteOptions{})
	_, err = leases.Create(env.Ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.SeederAddonNamespace, Name: seederv1alpha1.SeederLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("harvester-seeder-6d9f7c8b5-x2kq7_gone"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &metav1.MicroTime{Time: time.Now().Add(-2 * time.Hour)}, RenewTime: &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	ca := env.SeederWebhookCA()
	require.NoError(t, framework.ApplySeederWebhookOn(env.Ctx, env.Cluster.RESTConfig, ca, "clusters"))
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, seederv1alpha1.SeederWebhookName, metav1.DeleteOptions{})
		_ = framework.DeleteSeederService(ctx, env.Kube)
		_ = env.Kube.CoreV1().Secrets(seederv1alpha1.SeederAddonNamespace).Delete(ctx, seederv1alpha1.SeederWebhookCASecret, metav1.DeleteOptions{})
		_ = leases.Delete(ctx, seederv1alpha1.SeederLeaseName, metav1.DeleteOptions{})
	})
	return w
}

// play runs the person until stop closes.
func (w *seederWorld) play(r *run, stop <-chan struct{}) {
	tick := time.NewTicker(seederTick)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.env.Ctx.Done():
			return
		case <-tick.C:
			w.step(r)
		}
	}
}

// step is one look of the person and the judge, and maybe one act.
func (w *seederWorld) step(r *run) {
	ctx, cancel := context.WithTimeout(r.env.Ctx, 5*time.Second)
	defer cancel()
	w.judgeWebhook(ctx, r)
	w.judgeFinalizers(ctx, r, time.Now())
	switch p := w.rng.Intn(100); {
	case p < 12:
		w.toggleService(ctx, r)
	case p < 30:
		w.applyWebhook(ctx, r)
	case p < 45:
		w.plantFinalizer(ctx, r)
	}
}

// toggleService brings Seeder's Service and its ready endpoint, or takes
// them away. The served span ends before the endpoint goes.
func (w *seederWorld) toggleService(ctx context.Context, r *run) {
	w.mu.Lock()
	served := !w.servedAt.IsZero()
	if served {
		w.servedAt, w.confirmed = time.Time{}, ""
	}
	w.mu.Unlock()
	if served {
		if err := framework.DeleteSeederService(ctx, r.env.Kube); err != nil {
			w.note("taking Seeder's Service away: %v", err)
		}
		return
	}
	// A Service left by a removal that failed half-way goes first.
	_ = framework.DeleteSeederService(ctx, r.env.Kube)
	if err := framework.CreateSeederService(ctx, r.env.Kube); err != nil {
		w.note("bringing Seeder's Service: %v", err)
		_ = framework.DeleteSeederService(ctx, r.env.Kube)
		return
	}
	w.mu.Lock()
	w.servedAt = time.Now()
	w.served++
	w.mu.Unlock()
}

// applyWebhook puts Seeder's configuration back when it is gone.
func (w *seederWorld) applyWebhook(ctx context.Context, r *run) {
	_, err := r.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return
	}
	ca, err := r.env.Kube.CoreV1().Secrets(seederv1alpha1.SeederAddonNamespace).Get(ctx, seederv1alpha1.SeederWebhookCASecret, metav1.GetOptions{})
	if err != nil {
		w.note("reading Seeder's CA Secret: %v", err)
		return
	}
	ca.APIVersion, ca.Kind = "v1", "Secret"
	if err := framework.ApplySeederWebhookOn(ctx, r.env.Cluster.RESTConfig, ca, "clusters"); err != nil {
		w.note("applying Seeder's webhook configuration: %v", err)
		return
	}
	w.mu.Lock()
	w.applied++
	w.mu.Unlock()
}

// plantFinalizer leaves Seeder's finalizer on an Inventory not being
// deleted (one that Seeder served once), written on the version read.
func (w *seederWorld) plantFinalizer(ctx context.Context, r *run) {
	invs := r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	list, err := invs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) == 0 {
		return
	}
	inv := list.Items[w.rng.Intn(len(list.Items))]
	if inv.DeletionTimestamp != nil || slices.Contains(inv.Finalizers, seederv1alpha1.SeederFinalizer) {
		return
	}
	inv.Finalizers = append(inv.Finalizers, seederv1alpha1.SeederFinalizer)
	if _, err := invs.Update(ctx, &inv, metav1.UpdateOptions{}); err != nil {
		return // a conflict, or the apiserver restarting: the next pick
	}
	w.mu.Lock()
	w.planted++
	w.mu.Unlock()
}

// judgeWebhook confirms the configuration present once the Service has
// been served for seederServedSettle, and finds it deleted if it is gone
// or another while the span lasts.
func (w *seederWorld) judgeWebhook(ctx context.Context, r *run) {
	w.mu.Lock()
	servedAt, confirmed := w.servedAt, w.confirmed
	w.mu.Unlock()
	if servedAt.IsZero() || time.Since(servedAt) < seederServedSettle {
		return
	}
	cfg, err := r.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
	var uid types.UID
	switch {
	case err == nil:
		uid = cfg.UID
	case !apierrors.IsNotFound(err):
		return // the apiserver restarting: the next look tells
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.servedAt.Equal(servedAt) {
		return // the span ended meanwhile
	}
	switch {
	case confirmed == "" && uid != "":
		w.confirmed = uid
		w.spans++
	case confirmed != "" && uid != confirmed:
		w.findings = append(w.findings, fmt.Sprintf("Seeder's webhook configuration %s was deleted while its Service had a ready "+
			"endpoint (since %s, the configuration read present %s later)", seederv1alpha1.SeederWebhookName,
			servedAt.UTC().Format("15:04:05.000"), seederServedSettle))
		// One finding a deletion: a configuration applied again is
		// judged anew.
		w.confirmed = uid
	}
}

// judgeFinalizers follows the spans in which an Inventory carries Seeder's
// finalizer while the controller runs.
func (w *seederWorld) judgeFinalizers(ctx context.Context, r *run, now time.Time) {
	list, err := r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	carrying := map[string]bool{}
	for _, inv := range list.Items {
		if slices.Contains(inv.Finalizers, seederv1alpha1.SeederFinalizer) {
			carrying[inv.Name] = true
		}
	}
	for name := range w.finalizerSince {
		if !carrying[name] {
			delete(w.finalizerSince, name)
			w.removed++
		}
	}
	start, kill := time.Unix(0, w.marks.start.Load()), time.Unix(0, w.marks.kill.Load())
	for name := range carrying {
		since, open := w.finalizerSince[name]
		if !open {
			w.finalizerSince[name] = now
			continue
		}
		if !start.After(kill) {
			// The controller is down: nobody removes it meanwhile.
			continue
		}
		if start.After(since) {
			since = start
		}
		if now.Sub(since) < seederFinalizerWithin {
			continue
		}
		w.findings = append(w.findings, fmt.Sprintf("Inventory %s carried Seeder's finalizer %s for %s of the controller's running time "+
			"from %s while Seeder's Lease was stale", name, seederv1alpha1.SeederFinalizer, seederFinalizerWithin, since.UTC().Format("15:04:05.000")))
		w.finalizerSince[name] = now
	}
}

// quiesceSeeder ends the Seeder chaos: Seeder's Service goes for good and
// its configuration is left behind, orphaned, for the addon to remove.
func (r *run) quiesceSeeder() string {
	w := r.seeder
	ctx, cancel := context.WithTimeout(r.env.Ctx, 10*time.Second)
	defer cancel()
	w.mu.Lock()
	w.servedAt, w.confirmed = time.Time{}, ""
	w.mu.Unlock()
	if err := framework.DeleteSeederService(ctx, r.env.Kube); err != nil {
		return fmt.Sprintf("seeder: taking Seeder's Service away: %v", err)
	}
	w.applyWebhook(ctx, r)
	w.mu.Lock()
	w.quiescedAt = time.Now()
	w.mu.Unlock()
	return "seeder: Seeder's Service gone, its webhook configuration left orphaned"
}

// checkSeeder reports the findings, then waits for the orphaned
// configuration and every Seeder finalizer to go.
func (r *run) checkSeeder() {
	w := r.seeder
	w.mu.Lock()
	findings := append([]string(nil), w.findings...)
	quiesced := w.quiescedAt
	w.mu.Unlock()
	sort.Strings(findings)
	for _, f := range findings {
		r.violation("seeder: %s", f)
	}
	deadline := quiesced.Add(seederOrphanWithin)
	if time.Until(deadline) < 10*time.Second {
		deadline = time.Now().Add(10 * time.Second)
	}
	configs := r.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	invs := r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	var left []string
	gone := false
	for time.Now().Before(deadline) {
		_, err := configs.Get(r.env.Ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
		gone = apierrors.IsNotFound(err)
		left = left[:0]
		if list, err := invs.List(r.env.Ctx, metav1.ListOptions{}); err == nil {
			for _, inv := range list.Items {
				if slices.Contains(inv.Finalizers, seederv1alpha1.SeederFinalizer) {
					left = append(left, inv.Name)
				}
			}
		}
		if gone && len(left) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !gone {
		r.violation("seeder: Seeder's orphaned webhook configuration %s stayed for %s after its Service went for good",
			seederv1alpha1.SeederWebhookName, seederOrphanWithin)
	}
	if len(left) > 0 {
		r.violation("seeder: Seeder's finalizer stayed on Inventories %v after the chaos, Seeder's Lease stale", left)
	}
}

func (w *seederWorld) note(format string, args ...interface{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.notes) < 20 {
		w.notes = append(w.notes, "seeder: "+fmt.Sprintf(format, args...))
	}
}

func (w *seederWorld) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("seeder: Seeder's Service served %d time(s), %d span(s) judged with the configuration present, "+
		"the configuration applied again %d time(s), Seeder's finalizer planted %d time(s) and seen gone %d time(s)",
		w.served, w.spans, w.applied, w.planted, w.removed)
}

// seederNotes are what the person could not do.
func (w *seederWorld) seederNotes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.notes...)
}
