package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// SeedSample is the seed's sample InstancePool (examples/instancepool.yaml), byte for byte.
const SeedSample = `apiVersion: equinix.harvesterhci.io/v1
kind: InstancePool
metadata:
  name: harvester-pxe-worker
spec:
  count: 1
  billingCycle: hourly
  managementInterface:
    - eth0
  plan: c3.small.x86
  metro: SG
  nodeCleanupWaitInterval: 5m
  managementBondingOptions:
    mode: balance-tlb
    miimon: "100"
  networkingConfiguration:
    type: "hybrid"
    interfaceConfiguration:
      - name: eth1
        vlanIDS:
          - "1000"
          - "1001"
`

// The networkingConfiguration samples of docs/networking.md, byte for byte.
const (
	SeedHybrid = `  networkingConfiguration:
    type: "hybrid"
    interfaceConfiguration:
      - name: eth1
        vlanIDS:
          - "1000"
          - "1001"
`
	SeedHybridBonded = `  networkingConfiguration:
    type: "hybrid-bonded"
    interfaceConfiguration:
      - name: bond0
        vlanIDS:
          - "1000"
          - "1001"
`
	SeedLayer2Bonded = `  networkingConfiguration:
    type: "layer2-bonded"
    interfaceConfiguration:
      - name: bond0
        vlanIDS:
          - "1000"
          - "1001"
`
	SeedLayer2Individual = `  networkingConfiguration:
    type: "layer2-individual"
    interfaceConfiguration:
      - name: eth0
        vlanIDS:
          - "1000"
      - name: eth1
        vlanIDS:
          - "1000"
          - "1001"
`
)

// SeedPoolWith is the seed's sample pool with its networkingConfiguration
// replaced by networking (empty: the default, layer3).
func SeedPoolWith(t testing.TB, name, networking string) *equinixv1.InstancePool {
	t.Helper()
	i := strings.Index(SeedSample, "  networkingConfiguration:")
	return ParsePool(t, SeedSample[:i]+networking, name)
}

// ParsePool reads an InstancePool from YAML, optionally renamed.
func ParsePool(t testing.TB, doc, name string) *equinixv1.InstancePool {
	t.Helper()
	pool := &equinixv1.InstancePool{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), pool))
	if name != "" {
		pool.Name = name
	}
	return pool
}

// CreatePool creates a pool and deletes it (waiting for its servers to be
// released) when the test ends.
func (e *Env) CreatePool(pool *equinixv1.InstancePool) *equinixv1.InstancePool {
	e.T.Helper()
	created, err := e.Client.EquinixV1().InstancePools().Create(e.Ctx, pool, metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { e.DeletePoolAndWait(created.Name) })
	return created
}

// DeletePoolAndWait deletes a pool and waits until it and its Instances are
// gone (only a running controller gets there).
func (e *Env) DeletePoolAndWait(name string) {
	err := e.Client.EquinixV1().InstancePools().Delete(e.Ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	require.NoError(e.T, err)
	e.Eventually(func() bool {
		_, err := e.Client.EquinixV1().InstancePools().Get(e.Ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 2*time.Minute, "pool %s was not deleted", name)
}

// Eventually polls cond every 100ms until it holds or timeout passes.
func (e *Env) Eventually(cond func() bool, timeout time.Duration, msg string, args ...interface{}) {
	e.T.Helper()
	require.Eventually(e.T, cond, timeout, 100*time.Millisecond, fmt.Sprintf(msg, args...))
}

// Pool reads a pool.
func (e *Env) Pool(name string) *equinixv1.InstancePool {
	p, err := e.Client.EquinixV1().InstancePools().Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

// EditPool changes a pool as a person with kubectl edit would: read, change,
// write, and again on a conflict. The controller writes the pool's status
// (and with it its resourceVersion) at any time, so a single read-then-update
// fails now and then on a correct controller.
func (e *Env) EditPool(name string, change func(*equinixv1.InstancePool)) {
	e.T.Helper()
	pools := e.Client.EquinixV1().InstancePools()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pools.Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(p)
		_, err = pools.Update(e.Ctx, p, metav1.UpdateOptions{})
		return err
	})
	require.NoError(e.T, err, "editing pool %s", name)
}

// Instances lists a pool's Instances.
func (e *Env) Instances(pool string) []equinixv1.Instance {
	list, err := e.Client.EquinixV1().Instances().List(e.Ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{equinixv1.LabelPool: pool}).String()})
	if err != nil {
		return nil
	}
	return list.Items
}

// WaitPoolReady waits until the pool reports ready with count Instances managed.
func (e *Env) WaitPoolReady(name string, count int, timeout time.Duration) *equinixv1.InstancePool {
	e.T.Helper()
	var last *equinixv1.InstancePool
	ok := assert.Eventually(e.T, func() bool {
		last = e.Pool(name)
		return last != nil && last.Status.Status == equinixv1.PoolPhaseReady && int(last.Status.Ready) == count &&
			int(last.Status.Requested) == count && len(e.Instances(name)) == count
	}, timeout, 100*time.Millisecond)
	if !ok {
		e.Dump(name)
		e.T.FailNow()
	}
	return last
}

// Dump logs a pool, its Instances and their conditions, for failures.
func (e *Env) Dump(pool string) {
	p := e.Pool(pool)
	if p != nil {
		e.T.Logf("pool %s: status=%s ready=%d requested=%d", p.Name, p.Status.Status, p.Status.Ready, p.Status.Requested)
		for _, c := range p.Status.Conditions {
			e.T.Logf("  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, i := range e.Instances(pool) {
		e.T.Logf("instance %s: status=%s device=%s state=%s", i.Name, i.Status.Status, i.Status.InstanceID, i.Status.DeviceState)
		for _, c := range i.Status.Conditions {
			e.T.Logf("  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, r := range e.Agent.Results() {
		e.T.Logf("join agent: device %s %s ok=%v %s", r.DeviceID, r.Hostname, r.OK, r.Reason)
	}
}

// Condition returns an Instance condition.
func Condition(i *equinixv1.Instance, t string) *metav1.Condition {
	return conditions.Get(i.Status.Conditions, t)
}

// Events lists the Events about an object.
func (e *Env) Events(name string) []corev1.Event {
	list, err := e.Kube.CoreV1().Events("").List(e.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return nil
	}
	return list.Items
}

// EventRecorded waits (Events are written asynchronously) for an Event with
// the reason about name and reports whether one came.
func (e *Env) EventRecorded(name, reason string) bool {
	err := wait.PollUntilContextTimeout(e.Ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return e.HasEvent(name, reason), nil
	})
	return err == nil
}

// JoinResult waits for the join agent's outcome of the device's latest
// install. The agent records it just after it registers the Node, so a
// test that saw the Node, or what the controller made of it, may ask a
// moment before it is there.
func (e *Env) JoinResult(deviceID string) joinagent.Result {
	e.T.Helper()
	var got joinagent.Result
	e.Eventually(func() bool {
		var ok bool
		got, ok = e.Agent.LastResult(deviceID)
		return ok
	}, 30*time.Second, "the join agent recorded no install of device %s", deviceID)
	return got
}

// HasEvent reports whether an Event with the reason was recorded for name.
func (e *Env) HasEvent(name, reason string) bool {
	for _, ev := range e.Events(name) {
		if ev.Reason == reason {
			return true
		}
	}
	return false
}

// LogCapture records every logrus line the controller writes.
type LogCapture struct {
	mu    sync.Mutex
	lines []string
}

// Levels implements logrus.Hook.
func (c *LogCapture) Levels() []logrus.Level { return logrus.AllLevels }

// Fire implements logrus.Hook.
func (c *LogCapture) Fire(e *logrus.Entry) error {
	line, err := e.String()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.lines = append(c.lines, line)
	c.mu.Unlock()
	return nil
}

// Text is everything captured.
func (c *LogCapture) Text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "")
}

var capture = &LogCapture{}

func init() {
	logrus.AddHook(capture)
	logrus.SetLevel(logrus.DebugLevel)
}

// Logs is what the in-process controller has logged so far.
func Logs() string { return capture.Text() }

// AssertNoSecretLeaks scans every object the addon writes or annotates —
// pools, Instances, BMC inventories, Nodes, Events — and the captured log
// for the Metal token, the join token and the generated console passwords.
func (e *Env) AssertNoSecretLeaks() {
	e.T.Helper()
	secrets := []string{MetalToken, JoinToken}
	secs, err := e.Kube.CoreV1().Secrets(Namespace).List(e.Ctx, metav1.ListOptions{LabelSelector: equinixv1.LabelInstance})
	require.NoError(e.T, err)
	for _, s := range secs.Items {
		if p := string(s.Data["password"]); p != "" {
			secrets = append(secrets, p)
		}
	}
	e.AssertAbsent(secrets...)
}

// AssertAbsent scans the same objects and the log for values that must
// not be there (a wrong or rotated token, a BMC password).
func (e *Env) AssertAbsent(values ...string) {
	e.T.Helper()
	var blobs []string
	add := func(what string, obj interface{}, err error) {
		require.NoError(e.T, err)
		raw, err := json.Marshal(obj)
		require.NoError(e.T, err)
		blobs = append(blobs, what+": "+string(raw))
	}
	pools, err := e.Client.EquinixV1().InstancePools().List(e.Ctx, metav1.ListOptions{})
	add("pools", pools, err)
	insts, err := e.Client.EquinixV1().Instances().List(e.Ctx, metav1.ListOptions{})
	add("instances", insts, err)
	if e.Mode == config.ModeSeeder {
		inventories, err := e.Client.MetalV1alpha1().Inventories("").List(e.Ctx, metav1.ListOptions{})
		add("inventories", inventories, err)
	}
	nodes, err := e.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	add("nodes", nodes, err)
	events, err := e.Kube.CoreV1().Events("").List(e.Ctx, metav1.ListOptions{})
	add("events", events, err)
	blobs = append(blobs, "log: "+Logs())
	for _, b := range blobs {
		for _, s := range values {
			if strings.Contains(b, s) {
				i := strings.Index(b, s)
				e.T.Errorf("a secret value leaked into %s (near %q)", b[:strings.Index(b, ":")], b[max(0, i-80):i])
			}
		}
	}
}
