package sweep

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

const (
	namespace = "harvester-system"
	clusterID = "c1"
	// projectA is the default Secret's project; projectB is reachable only
	// through Secret "b" (see newWorld).
	projectA = "a0000000-0000-4000-8000-00000000000a"
	projectB = "b0000000-0000-4000-8000-00000000000b"
	tokenA   = "token-a"
	tokenB   = "token-b"
	// grace is the orphan grace period, settle the Metal timeout.
	grace  = time.Hour
	settle = 10 * time.Minute
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// world is a sweep over a simulated Metal API with two projects and
// in-memory Kubernetes objects.
type world struct {
	t        *testing.T
	sim      *metalsim.Simulator
	clock    *metalsim.FakeClock
	provider metal.Provider
	s        *Sweeper
	events   *eventLog
	drift    *driftLog
	nodes    *nodeController
	insts    *instanceController
	cms      *fakecache.Store[*corev1.ConfigMap, *corev1.ConfigMapList]
	// ids are device IDs by hostname, to name devices in expectations.
	ids map[string]string
}

// given is what a test starts from. Secrets "equinix-addon" (project A,
// the default) and "b" (project B, labelled) always exist.
type given struct {
	timings   metalsim.Timings
	dryRun    bool
	devices   []device
	vlans     []vlan
	instances []*equinixv1.Instance
	// live are Instances the apiserver has that the cache does not show
	// yet; stale ones the cache shows that the apiserver no longer has.
	live, stale []*equinixv1.Instance
	pools       []*equinixv1.InstancePool
	nodes       []*corev1.Node
	ledger      string
	// secrets are more credentials Secrets, labelled.
	secrets []*corev1.Secret
}

// device is a device to create: its project (A unless set), tags, and age
// when the sweep runs; deleting ones are being deprovisioned already.
type device struct {
	hostname string
	project  string
	tags     []string
	age      time.Duration
	deleting bool
}

type vlan struct {
	project, metro string
	vxlan          int
	tags           []string
}

func newWorld(t *testing.T, g given) *world {
	t.Helper()
	clock := metalsim.NewFakeClock(now)
	sim := metalsim.New(metalsim.Options{Clock: clock, Seed: 1, Timings: g.timings})
	sim.AddProject(tokenA, projectA)
	sim.AddProject(tokenB, projectB)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	provider, err := metal.NewProvider(metal.Options{BaseURL: srv.URL, RequestsPerSecond: -1, Timeout: 5 * time.Second})
	require.NoError(t, err)

	secrets := fakecache.New("secrets", append([]*corev1.Secret{credentialsSecret("equinix-addon", tokenA, projectA),
		credentialsSecret("b", tokenB, projectB)}, g.secrets...)...)
	resolver := credentials.NewResolver(secrets, namespace, "equinix-addon")
	cms := fakecache.NewStore[*corev1.ConfigMap, *corev1.ConfigMapList]("configmaps")
	if g.ledger != "" {
		_, err := cms.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: equinixv1.ConfigMapLedger},
			Data: map[string]string{"projects": g.ledger}})
		require.NoError(t, err)
	}
	ids := map[string]string{}
	w := &world{t: t, sim: sim, clock: clock, provider: provider, events: &eventLog{ids: ids}, drift: &driftLog{}, cms: cms, ids: ids,
		nodes: &nodeController{nodes: map[string]*corev1.Node{}}}
	w.createDevices(g.devices)
	w.createVLANs(g.vlans)
	for _, n := range g.nodes {
		n = n.DeepCopy()
		if id, ok := n.Labels[equinixv1.LabelDeviceID]; ok {
			n.Labels[equinixv1.LabelDeviceID] = w.deviceID(id)
		}
		w.nodes.nodes[n.Name] = n
	}
	w.insts = &instanceController{cached: w.resolved(append(append([]*equinixv1.Instance(nil), g.instances...), g.stale...)),
		live: w.resolved(append(append([]*equinixv1.Instance(nil), g.instances...), g.live...))}
	w.s = &Sweeper{
		ctx:         context.Background(),
		settings:    Settings{Namespace: namespace, Interval: time.Minute, GracePeriod: grace, MetalTimeout: settle, DryRun: g.dryRun},
		clusterID:   clusterID,
		instances:   w.insts,
		pools:       fakecache.NonNamespaced[*equinixv1.InstancePool]{Cache: fakecache.New("instancepools", g.pools...)},
		nodes:       w.nodes,
		secrets:     secrets,
		namespaces:  k8sfake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}).CoreV1().Namespaces(),
		metal:       provider,
		credentials: resolver,
		ledger:      ledger.New(cms, namespace),
		recorder:    w.events,
		drift:       w.drift,
		now:         clock.Now,
		emptySince:  map[string]time.Time{},
	}
	sim.ResetRequests()
	return w
}

func credentialsSecret(name, token, project string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{equinixv1.LabelSecret: equinixv1.SecretCredentials}},
		Data:       map[string][]byte{credentials.TokenKey: []byte(token), credentials.ProjectKey: []byte(project)},
	}
}

func (w *world) client(project string) metal.Client {
	creds := metal.Credentials{Token: tokenA, ProjectID: projectA}
	if project == projectB {
		creds = metal.Credentials{Token: tokenB, ProjectID: projectB}
	}
	c, err := w.provider.Client(creds)
	require.NoError(w.t, err)
	return c
}

// createDevices makes the devices oldest first, each at its age's time.
func (w *world) createDevices(devices []device) {
	sorted := append([]device(nil), devices...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].age > sorted[b].age })
	ctx := context.Background()
	for _, d := range sorted {
		project := d.project
		if project == "" {
			project = projectA
		}
		c := w.client(project)
		w.clock.Set(now.Add(-d.age))
		created, err := c.CreateDevice(ctx, metal.CreateDeviceRequest{Hostname: d.hostname, Plan: "c3.small.x86", Metro: "da",
			OperatingSystem: "ubuntu_22_04", BillingCycle: "hourly", Tags: d.tags})
		require.NoError(w.t, err)
		w.ids[d.hostname] = created.ID
		if d.deleting {
			_, err := c.GetDevice(ctx, created.ID) // active by now
			require.NoError(w.t, err)
			require.NoError(w.t, c.DeleteDevice(ctx, created.ID, false))
		}
	}
	w.clock.Set(now)
}

func (w *world) createVLANs(vlans []vlan) {
	for _, v := range vlans {
		project := v.project
		if project == "" {
			project = projectA
		}
		_, err := w.client(project).CreateVLAN(context.Background(), metal.CreateVLANRequest{Metro: v.metro, VXLAN: v.vxlan, Tags: v.tags})
		require.NoError(w.t, err)
	}
}

// resolved copies Instances with their recorded device ID resolved.
func (w *world) resolved(insts []*equinixv1.Instance) []*equinixv1.Instance {
	out := make([]*equinixv1.Instance, 0, len(insts))
	for _, i := range insts {
		i = i.DeepCopy()
		i.Status.InstanceID = w.deviceID(i.Status.InstanceID)
		out = append(out, i)
	}
	return out
}

// deviceID is the ID of the device "{hostname}" names, or id itself.
func (w *world) deviceID(id string) string {
	h, ok := strings.CutPrefix(id, "{")
	if !ok {
		return id
	}
	known, ok := w.ids[strings.TrimSuffix(h, "}")]
	require.True(w.t, ok, "unknown device %s", id)
	return known
}

// names turns the device IDs of ids (by hostname) back into "{hostname}",
// to write expected messages before the IDs are known.
func names(ids map[string]string) *strings.Replacer {
	var pairs []string
	for h, id := range ids {
		pairs = append(pairs, id, "{"+h+"}")
	}
	return strings.NewReplacer(pairs...)
}

// devices lists a project's devices by hostname, with their state unless
// active, sorted.
func (w *world) devices(project string) []string {
	out := []string{}
	for _, d := range w.sim.Devices(project) {
		name := d.GetHostname()
		if d.GetState() != metalv1.DEVICESTATE_ACTIVE {
			name += " (" + string(d.GetState()) + ")"
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// deletes are the devices the sweep asked the API to delete, by hostname.
func (w *world) deletes() []string {
	out := []string{}
	for _, r := range w.sim.RequestsFor(metalsim.OpDeleteDevice) {
		out = append(out, strings.Trim(names(w.ids).Replace(path.Base(r.Path)), "{}"))
	}
	sort.Strings(out)
	return out
}

// vlans lists a project's VXLANs in metro, sorted.
func (w *world) vlans(project, metro string) []int {
	vlans, err := w.client(project).ListVLANs(context.Background(), metro)
	require.NoError(w.t, err)
	out := []int{}
	for _, v := range vlans {
		out = append(out, v.VXLAN)
	}
	sort.Ints(out)
	return out
}

// eventLog records Events as "<type> <reason> <kind>/<name>: <message>",
// device IDs named as in names.
type eventLog struct {
	ids    map[string]string
	events []string
}

func (e *eventLog) Event(obj runtime.Object, eventtype, reason, message string) {
	kind := "?"
	switch obj.(type) {
	case *equinixv1.InstancePool:
		kind = "pool"
	case *corev1.Namespace:
		kind = "namespace"
	case *corev1.Node:
		kind = "node"
	}
	m, _ := meta.Accessor(obj)
	e.events = append(e.events, fmt.Sprintf("%s %s %s/%s: %s", eventtype, reason, kind, m.GetName(), names(e.ids).Replace(message)))
}

func (e *eventLog) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	e.Event(obj, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (e *eventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	e.Eventf(obj, eventtype, reason, messageFmt, args...)
}

// driftLog records the Instances marked as having lost their device.
type driftLog struct{ marked []string }

func (d *driftLog) MarkDeviceGone(inst *equinixv1.Instance) error {
	d.marked = append(d.marked, inst.Name)
	return nil
}

// instanceController serves the Instance cache and the apiserver's list by
// name, each from its own set; the embedded interface is nil, so any other
// call panics.
type instanceController struct {
	equinixcontrollers.InstanceController
	cached, live []*equinixv1.Instance
}

func (c *instanceController) Cache() generic.NonNamespacedCacheInterface[*equinixv1.Instance] {
	return fakecache.NonNamespaced[*equinixv1.Instance]{Cache: fakecache.New("instances", c.cached...)}
}

func (c *instanceController) List(opts metav1.ListOptions) (*equinixv1.InstanceList, error) {
	sel, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, err
	}
	out := &equinixv1.InstanceList{}
	for _, i := range c.live {
		if sel.Matches(fields.Set{"metadata.name": i.Name}) {
			out.Items = append(out.Items, *i)
		}
	}
	return out, nil
}

// nodeController holds Nodes for the cache and for deletes with a UID
// precondition; the embedded interface is nil, so any other call panics.
type nodeController struct {
	corecontrollers.NodeController
	nodes map[string]*corev1.Node
}

func (c *nodeController) Cache() generic.NonNamespacedCacheInterface[*corev1.Node] {
	objs := make([]*corev1.Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		objs = append(objs, n)
	}
	return fakecache.NonNamespaced[*corev1.Node]{Cache: fakecache.New("nodes", objs...)}
}

func (c *nodeController) Delete(name string, opts *metav1.DeleteOptions) error {
	n, ok := c.nodes[name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	if opts != nil && opts.Preconditions != nil && opts.Preconditions.UID != nil && *opts.Preconditions.UID != n.UID {
		return apierrors.NewConflict(corev1.Resource("nodes"), name, fmt.Errorf("UID precondition failed"))
	}
	delete(c.nodes, name)
	return nil
}

// remaining are the names of the Nodes left, sorted.
func (c *nodeController) remaining() []string {
	out := []string{}
	for name := range c.nodes {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// list is a copy of the Events so far, never nil.
func (e *eventLog) list() []string { return append([]string{}, e.events...) }
