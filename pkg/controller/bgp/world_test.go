package bgp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/nodedevice"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

const (
	namespace = "harvester-system"
	project   = "a0000000-0000-4000-8000-00000000000a"
	token     = "token-a"
	localASN  = 65000
	resync    = 10 * time.Minute
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// world is the BGP chain over a simulated Metal project holding one active
// device, web-1, with in-memory Instances, Secrets and Nodes.
type world struct {
	t        *testing.T
	sim      *metalsim.Simulator
	clock    *metalsim.FakeClock
	provider metal.Provider
	metal    metal.Client
	device   *metal.Device
	h        *Handler
	nodes    *nodeController
	events   *eventLog
	secrets  secrets
}

func newWorld(t *testing.T, instances ...*equinixv1.Instance) *world {
	t.Helper()
	clock := metalsim.NewFakeClock(now)
	sim := metalsim.New(metalsim.Options{Clock: clock, Seed: 1})
	sim.AddProject(token, project)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	provider, err := metal.NewProvider(metal.Options{BaseURL: srv.URL, RequestsPerSecond: -1, Timeout: 5 * time.Second})
	require.NoError(t, err)
	client, err := provider.Client(metal.Credentials{Token: token, ProjectID: project})
	require.NoError(t, err)
	ctx := context.Background()
	created, err := client.CreateDevice(ctx, metal.CreateDeviceRequest{Hostname: "web-1", Plan: "c3.small.x86", Metro: "da",
		OperatingSystem: "ubuntu_22_04", BillingCycle: "hourly"})
	require.NoError(t, err)
	device, err := client.GetDevice(ctx, created.ID)
	require.NoError(t, err)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "equinix-addon"},
		Data: map[string][]byte{credentials.TokenKey: []byte(token), credentials.ProjectKey: []byte(project)}}
	resolved := make([]*equinixv1.Instance, 0, len(instances))
	for _, i := range instances {
		i = i.DeepCopy()
		i.Status.InstanceID = strings.ReplaceAll(i.Status.InstanceID, "{web-1}", device.ID)
		resolved = append(resolved, i)
	}
	insts := fakecache.NonNamespaced[*equinixv1.Instance]{Cache: fakecache.New("instances", resolved...)}
	w := &world{t: t, sim: sim, clock: clock, provider: provider, metal: client, device: device,
		nodes: &nodeController{nodes: map[string]*corev1.Node{}}, events: &eventLog{device: device.ID},
		secrets: secrets{secret.Name: secret}}
	w.h = &Handler{
		ctx:         ctx,
		settings:    Settings{LocalASN: localASN, Resync: resync},
		nodes:       w.nodes,
		instances:   insts,
		metal:       provider,
		credentials: credentials.NewResolver(w.secrets, namespace, "equinix-addon"),
		matcher:     nodedevice.NewMatcher(insts),
		recorder:    w.events,
		checked:     map[string]checked{}, enabled: map[string]bool{}, reported: map[string]string{},
		now: clock.Now,
	}
	sim.ResetRequests()
	return w
}

// pass runs the chain on the stored node, as the workqueue would, and
// returns the error with the device's ID named {web-1}.
func (w *world) pass(name string) (*corev1.Node, string) {
	node, err := w.h.AnnotatePeers(name, w.nodes.nodes[name].DeepCopy())
	if err != nil {
		return node, w.named(err.Error())
	}
	return node, ""
}

func (w *world) named(s string) string { return strings.ReplaceAll(s, w.device.ID, "{web-1}") }

// calls are the Metal operations made since the last reset, in order.
func (w *world) calls() []string {
	out := []string{}
	for _, r := range w.sim.Requests() {
		out = append(out, r.Operation)
	}
	return out
}

// config is the project's BGP config as "<type> <ASN>", "" for none.
func (w *world) config() string {
	cfg, err := w.metal.GetBGPConfig(context.Background())
	require.NoError(w.t, err)
	if cfg.ID == "" {
		return ""
	}
	return fmt.Sprintf("%s %d", cfg.DeploymentType, cfg.ASN)
}

// sessions are the address families of the device's sessions.
func (w *world) sessions() []string {
	out := []string{}
	sessions, err := w.metal.ListBGPSessions(context.Background(), w.device.ID)
	if metal.IsNotFound(err) {
		return out
	}
	require.NoError(w.t, err)
	for _, s := range sessions {
		out = append(out, s.AddressFamily)
	}
	return out
}

// reset forgets the calls, Events, patches and enqueues so far.
func (w *world) reset() {
	w.sim.ResetRequests()
	w.events.events, w.nodes.patches, w.nodes.enqueued = nil, nil, nil
}

// secrets are the namespace's Secrets by name; tests remove and restore
// them.
type secrets map[string]*corev1.Secret

func (s secrets) Get(ns, name string) (*corev1.Secret, error) {
	if sec, ok := s[name]; ok && ns == namespace {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

// nodeController holds Nodes and applies the annotation merge patches the
// chain sends, refusing any other patch; the embedded interface is nil, so
// any other call panics.
type nodeController struct {
	corecontrollers.NodeController
	nodes    map[string]*corev1.Node
	patches  []string
	enqueued []string
}

func (c *nodeController) Patch(name string, pt types.PatchType, data []byte, subresources ...string) (*corev1.Node, error) {
	if pt != types.MergePatchType || len(subresources) > 0 {
		return nil, fmt.Errorf("unexpected %s patch of %v", pt, subresources)
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&patch); err != nil {
		return nil, fmt.Errorf("not an annotations patch: %s: %w", data, err)
	}
	c.patches = append(c.patches, string(data))
	node := c.nodes[name].DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	for k, v := range patch.Metadata.Annotations {
		if v == nil {
			delete(node.Annotations, k)
		} else {
			node.Annotations[k] = *v
		}
	}
	c.nodes[name] = node
	return node.DeepCopy(), nil
}

func (c *nodeController) EnqueueAfter(name string, after time.Duration) {
	c.enqueued = append(c.enqueued, fmt.Sprintf("%s after %s", name, after))
}

// eventLog records Events as "<type> <reason> <kind>/<name>: <message>",
// with the device's ID named {web-1}.
type eventLog struct {
	device string
	events []string
}

func (e *eventLog) Event(obj runtime.Object, eventtype, reason, message string) {
	m, _ := meta.Accessor(obj)
	if e.device != "" {
		message = strings.ReplaceAll(message, e.device, "{web-1}")
	}
	e.events = append(e.events, fmt.Sprintf("%s %s node/%s: %s", eventtype, reason, m.GetName(), message))
}

func (e *eventLog) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	e.Event(obj, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (e *eventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	e.Eventf(obj, eventtype, reason, messageFmt, args...)
}

func (e *eventLog) list() []string { return append([]string{}, e.events...) }
