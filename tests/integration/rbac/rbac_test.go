// Package rbac runs a whole lifecycle under the chart's own RBAC with the
// apiserver's audit log on, and checks the grants against what the
// controller did: a verb it needed and lacked shows as a 403, a verb it was
// granted and never used as surplus. Every other integration package runs
// the controller under the same RBAC, so a missing verb fails there too.
package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(framework.RunMain(m, cluster.Options{AuditLog: true, ControllerManager: true}, &shared))
}

// grant is one (API group, resource, verb) the chart grants, with the names
// it is limited to.
type grant struct {
	group, resource, verb string
}

func (g grant) String() string {
	if g.group == "" {
		return g.verb + " " + g.resource
	}
	return g.verb + " " + g.resource + "." + g.group
}

// notProvoked are grants a single lifecycle cannot be relied on to use,
// each with the reason it is granted all the same.
var notProvoked = map[grant]string{
	// The recorder patches an Event it already sent (its count) only when
	// the same Event repeats within minutes.
	{"", "events", "patch"}: "repeated Events are aggregated by patching",
	// Informers stream their first list as a watch where the apiserver
	// supports it, as this one does; Harvester's apiservers answer a list.
	{"equinix.harvesterhci.io", "instancepools", "list"}:  "informers list on apiservers without streaming lists",
	{"equinix.harvesterhci.io", "instances", "list"}:      "informers list on apiservers without streaming lists",
	{"", "nodes", "list"}:                                 "informers list on apiservers without streaming lists",
	{"", "secrets", "list"}:                               "informers list on apiservers without streaming lists",
	{"", "configmaps", "list"}:                            "informers list on apiservers without streaming lists",
	{"harvesterhci.io", "settings", "list"}:               "informers list on apiservers without streaming lists",
	{"", "services", "list"}:                              "informers list on apiservers without streaming lists",
	{"equinix.harvesterhci.io", "elasticips", "list"}:     "informers list on apiservers without streaming lists",
	{"equinix.harvesterhci.io", "elasticippools", "list"}: "informers list on apiservers without streaming lists",
	{"metal.harvesterhci.io", "inventories", "list"}:      "informers list on apiservers without streaming lists",
	{"metal.harvesterhci.io", "addresspools", "list"}:     "informers list on apiservers without streaming lists",
	// A node is read from the API server right before a power command; a
	// pool's lifecycle sends none. The power tests (tests/integration/hardware)
	// run under this same RBAC and use it; the hardware mode's lifecycle here
	// sends one.
	{"", "nodes", "get"}: "read right before a power command",
	// Setting blockOwnerDeletion on an Instance's owner reference to its
	// pool is checked by the OwnerReferencesPermissionEnforcement
	// admission plugin, where it is on, without a request of its own.
	{"equinix.harvesterhci.io", "instancepools/finalizers", "update"}: "blockOwnerDeletion on Instances",
}

func TestChartRBACIsExactlyWhatTheControllerUses(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	require.NotNil(t, env.Identity)
	mark := auditMark(t, env)
	// The VIP is an Elastic IP of the project from the start, so the addon
	// makes its ElasticIP when it starts.
	env.ReserveVIP("sg")
	env.IngressExpose()
	user := "system:serviceaccount:" + framework.Namespace + ":" + framework.Release
	addon := framework.StartAddon(t, env, framework.AddonOptions{
		LeaderElect: true, LockName: framework.Release,
		ExtraArgs: []string{"--orphan-sweep-interval", "300ms", "--orphan-grace-period", "0s", "--orphan-dry-run=false",
			"--initialize-nodes"},
	})
	lifecycle(t, env)
	vipLifecycle(t, env)
	loadBalancerLifecycle(t, env)
	cloudProviderNode(t, env)
	addon.Stop()

	assertGrantsUsed(t, env, user, mark)
}

// auditMark is where the audit log stands: a test's calls are those past
// its mark (the hardware modes' identities share a ServiceAccount).
func auditMark(t *testing.T, env *framework.Env) int {
	t.Helper()
	events, err := env.Cluster.AuditEvents()
	require.NoError(t, err)
	return len(events)
}

// assertGrantsUsed checks the chart's grants of env's identity against
// what user did past the audit log's mark, from the audit log: nothing
// refused, nothing granted and unused.
func assertGrantsUsed(t *testing.T, env *framework.Env, user string, mark int) {
	t.Helper()
	events, err := env.Cluster.AuditEvents()
	require.NoError(t, err)
	used := map[grant]bool{}
	var forbidden []string
	for _, ev := range events[mark:] {
		if ev.User.Username != user || ev.ObjectRef == nil || ev.Stage != "ResponseComplete" {
			continue
		}
		resource := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			resource += "/" + ev.ObjectRef.Subresource
		}
		g := grant{ev.ObjectRef.APIGroup, resource, ev.Verb}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 403 {
			forbidden = append(forbidden, fmt.Sprintf("%s (%s/%s)", g, ev.ObjectRef.Namespace, ev.ObjectRef.Name))
			continue
		}
		used[g] = true
	}
	assert.Empty(t, forbidden, "the controller was refused calls the chart does not grant")
	var surplus []string
	for _, g := range grants(env.Identity.ClusterRules, env.Identity.NamespaceRules) {
		if !used[g] && notProvoked[g] == "" {
			surplus = append(surplus, g.String())
		}
	}
	sort.Strings(surplus)
	assert.Empty(t, surplus, "the chart grants verbs the controller never used in a whole lifecycle")
}

func grants(ruleSets ...[]rbacv1.PolicyRule) []grant {
	var out []grant
	for _, rules := range ruleSets {
		for _, r := range rules {
			for _, group := range r.APIGroups {
				for _, res := range r.Resources {
					for _, verb := range r.Verbs {
						out = append(out, grant{group, res, verb})
					}
				}
			}
		}
	}
	return out
}

// lifecycle is what a user and the cluster do to the addon in a life: a
// pool grows to two servers and shrinks to one (maintenance, device and Node
// deletion, the console Secret going), a server is removed on a Harvester
// without maintenance mode (cordon and drain), an orphaned device is swept,
// and the pool is deleted.
func lifecycle(t *testing.T, env *framework.Env) {
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "rbac"))
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)

	// A second metro extends the ledger; a pool naming a Secret without the
	// addon's label is told so (a metadata read finds it) and, having never
	// asked for a server, is deleted at once.
	other := framework.ParsePool(t, framework.SeedSample, "rbac-da")
	other.Spec.Metro = "DA"
	other = env.CreatePool(other)
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: "rbac-unlabelled"},
		Data: map[string][]byte{"METAL_AUTH_TOKEN": []byte(framework.MetalToken), "PROJECT_ID": []byte(framework.ProjectID)}}
	_, err := env.Kube.CoreV1().Secrets(framework.Namespace).Create(env.Ctx, unlabelled, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Secrets(framework.Namespace).Delete(context.Background(), unlabelled.Name, metav1.DeleteOptions{})
	})
	bad := framework.ParsePool(t, framework.SeedSample, "rbac-unlabelled")
	bad.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: unlabelled.Name}
	bad = env.CreatePool(bad)
	env.Eventually(func() bool {
		p := env.Pool(bad.Name)
		c := conditions.Get(p.Status.Conditions, equinixv1.PoolCredentialsReady)
		return c != nil && strings.Contains(c.Message, "lacks label")
	}, time.Minute, "the pool did not say its Secret lacks the label")
	env.DeletePoolAndWait(bad.Name)
	env.WaitPoolReady(other.Name, 1, 2*time.Minute)
	env.DeletePoolAndWait(other.Name)
	scale(t, env, pool.Name, 2)
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)

	// A server removed where Harvester has no maintenance mode (before
	// v1.2) is cordoned and drained by the addon itself.
	setVersion(t, env, "v1.1.2")
	victim := env.Instances(pool.Name)[1].Name
	podsToDrain(t, env, victim)
	_, err = env.Client.EquinixV1().Instances().Patch(env.Ctx, victim, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+equinixv1.AnnotationDelete+`":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	scale(t, env, pool.Name, 1)
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	setVersion(t, env, framework.HarvesterVersion)

	// A device of this cluster that no Instance claims, and a project the
	// ledger remembers that no Secret names (reported at every sweep).
	orphan := framework.OrphanDevice(t, env, "rbac-orphan")
	env.Eventually(func() bool { _, ok := env.Sim.Device(orphan); return !ok }, time.Minute, "the orphan was not swept")
	rememberProject(t, env, "00000000-0000-0000-0000-00000000dead")
	env.Eventually(func() bool { return countEvents(env, framework.Namespace, "ProjectUnreachable") >= 2 }, time.Minute,
		"the sweep did not report the project twice")
	env.DeletePoolAndWait(pool.Name)
}

// vipLifecycle: the VIP's ElasticIP follows kube-vip to a server (its
// status written, its finalizer kept), and is replaced when the VIP changes.
func vipLifecycle(t *testing.T, env *framework.Env) {
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "rbac-vip"))
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	node := env.Instances(pool.Name)[0].Name
	require.NoError(t, env.SetVIPHost(node))
	env.Eventually(func() bool {
		e := env.ElasticIP(equinixv1.VIPElasticIPName)
		return e != nil && e.Status.Status == equinixv1.ElasticIPPhaseAssigned && e.Status.NodeName == node
	}, time.Minute, "the VIP did not follow kube-vip")

	_, err := env.Sim.AddIPReservation(framework.ProjectID, metalsim.IPReservationSpec{CIDR: "10.0.0.11/32", Metro: "sg"})
	require.NoError(t, err)
	setVIP := func(ip string) {
		cm, err := env.Kube.CoreV1().ConfigMaps(framework.Namespace).Get(env.Ctx, "vip", metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data["ip"] = ip
		_, err = env.Kube.CoreV1().ConfigMaps(framework.Namespace).Update(env.Ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		env.Eventually(func() bool {
			e := env.ElasticIP(equinixv1.VIPElasticIPName)
			return e != nil && e.Spec.Address == ip && e.Status.Status == equinixv1.ElasticIPPhaseAssigned
		}, time.Minute, "the VIP's ElasticIP was not replaced for %s", ip)
	}
	setVIP("10.0.0.11")
	setVIP(framework.VIP)
	env.DeletePoolAndWait(pool.Name)
	// Their finalizers go while the controller runs.
	env.DeleteElasticIPs()
}

// loadBalancerLifecycle: an ElasticIPPool's block is offered as an IPPool
// (made, then brought back in line after a person changed it), a Service
// with one of its addresses gets an ElasticIP that goes with it, and the
// pool's deletion takes the IPPool with it.
func loadBalancerLifecycle(t *testing.T, env *framework.Env) {
	t.Helper()
	pool := env.CreateElasticIPPool("rbac-lb", "sg", 2)
	pool = env.WaitElasticIPPoolReady(pool.Name, time.Minute)
	ipPools := env.Client.LoadbalancerV1beta1().IPPools()
	ipp, err := ipPools.Get(env.Ctx, pool.Name, metav1.GetOptions{})
	require.NoError(t, err)
	ipp.Spec.Description = "changed by a person"
	_, err = ipPools.Update(env.Ctx, ipp, metav1.UpdateOptions{})
	require.NoError(t, err)
	p := env.ElasticIPPool(pool.Name)
	p.Spec.Selector = &equinixv1.ElasticIPPoolSelector{Priority: 5}
	_, err = env.Client.EquinixV1().ElasticIPPools().Update(env.Ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		got, err := ipPools.Get(env.Ctx, pool.Name, metav1.GetOptions{})
		return err == nil && got.Spec.Selector.Priority == 5 && got.Spec.Description != "changed by a person"
	}, time.Minute, "the IPPool was not brought in line")
	address := framework.PoolAddress(pool, 1)
	env.LoadBalancerService("default", "rbac-lb", address)
	name := pool.Name + "-" + strings.ReplaceAll(address, ".", "-")
	env.Eventually(func() bool { return env.ElasticIP(name) != nil }, time.Minute, "no ElasticIP for the Service")
	require.NoError(t, env.Kube.CoreV1().Services("default").Delete(env.Ctx, "rbac-lb", metav1.DeleteOptions{}))
	env.Eventually(func() bool { return env.ElasticIP(name) == nil }, time.Minute, "the Service's ElasticIP did not go with it")
	env.DeleteElasticIPPools()
}

// cloudProviderNode: a node whose kubelet waits for a cloud provider gets
// its addresses (the status) and loses its taint.
func cloudProviderNode(t *testing.T, env *framework.Env) {
	t.Helper()
	env.CloudProviderNode("rbac-cloud", "sg")
	env.Eventually(func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, "rbac-cloud", metav1.GetOptions{})
		return err == nil && len(n.Status.Addresses) > 0 && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == "node.cloudprovider.kubernetes.io/uninitialized"
		})
	}, time.Minute, "the node was not initialized")
}

// podsToDrain puts on node what a drain evicts (a pod of no controller)
// and what it leaves (a DaemonSet's pod, whose DaemonSet it reads).
func podsToDrain(t *testing.T, env *framework.Env, node string) {
	t.Helper()
	ds, err := env.Kube.AppsV1().DaemonSets("default").Create(env.Ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "agent-" + node},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rbac-agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rbac-agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.AppsV1().DaemonSets("default").Delete(context.Background(), ds.Name, metav1.DeleteOptions{})
	})
	controller := true
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "drained-" + node}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "daemon-" + node, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &controller}}}},
	} {
		pod.Spec = corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}
		_, err = env.Kube.CoreV1().Pods("default").Create(env.Ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

func scale(t *testing.T, env *framework.Env, name string, count int32) {
	t.Helper()
	env.EditPool(name, func(p *equinixv1.InstancePool) {
		p.Spec.Count = count
	})
}

func setVersion(t *testing.T, env *framework.Env, version string) {
	t.Helper()
	require.NoError(t, framework.SetServerVersion(env, version))
}

// rememberProject adds a project to the ledger as the addon would have.
func rememberProject(t *testing.T, env *framework.Env, project string) {
	t.Helper()
	ctx := context.Background()
	cms := env.Kube.CoreV1().ConfigMaps(framework.Namespace)
	cm, err := cms.Get(ctx, equinixv1.ConfigMapLedger, metav1.GetOptions{})
	require.NoError(t, err)
	entries := map[string][]string{}
	require.NoError(t, json.Unmarshal([]byte(cm.Data["projects"]), &entries))
	entries[project] = []string{"sg"}
	raw, err := json.Marshal(entries)
	require.NoError(t, err)
	cm.Data["projects"] = string(raw)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func countEvents(env *framework.Env, name, reason string) int {
	n := 0
	for _, ev := range env.Events(name) {
		if ev.Reason == reason {
			n += int(max(ev.Count, 1))
		}
	}
	return n
}
