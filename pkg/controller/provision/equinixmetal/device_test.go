package equinixmetal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metaltest"
)

const (
	testToken   = "device-test-token"
	testProject = "6c1d1f1e-0a0b-4c0d-8e0f-101112131415"
)

// statusStore stands in for the apiserver: it keeps the last status written
// and can refuse writes, as an apiserver that is restarting does. The
// embedded interface is nil: the create chain calls only UpdateStatus.
type statusStore struct {
	equinixcontrollers.InstanceController
	stored *equinixv1.Instance
	down   bool
}

func (s *statusStore) UpdateStatus(inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	if s.down {
		return nil, errors.New("connection refused")
	}
	s.stored = inst.DeepCopy()
	return inst.DeepCopy(), nil
}

type createWorld struct {
	sim    *metalsim.Simulator
	client metal.Client
	store  *statusStore
	h      *harness
	inst   *equinixv1.Instance
}

// createSettle is the worlds' wait for a create whose answer was lost
// (2 × MetalTimeout).
const createSettle = 400 * time.Millisecond

func newCreateWorld(t *testing.T) *createWorld {
	t.Helper()
	return newCreateWorldTimeout(t, 5*time.Second)
}

// newCreateWorldTimeout is newCreateWorld with a Metal client that gives up
// on a request after timeout.
func newCreateWorldTimeout(t *testing.T, timeout time.Duration) *createWorld {
	t.Helper()
	sim, client := metaltest.NewClientTimeout(t, testToken, testProject, timeout)

	const ns = "harvester-system"
	cfg := &config.Config{Namespace: ns, JoinTokenSecret: "equinix-addon", JoinTokenKey: "JOIN_TOKEN",
		IPXEPublicURL: "http://127.0.0.1:8081", PollInterval: 100 * time.Millisecond, MetalTimeout: createSettle / 2}
	join := joininfo.NewResolver(cfg,
		fakecache.New("configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vip"}, Data: map[string]string{"ip": "10.0.0.10"}}),
		fakecache.New("secrets", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "equinix-addon"}, Data: map[string][]byte{"JOIN_TOKEN": []byte("join-token")}}),
		fakecache.NonNamespaced[*harvesterv1beta1.Setting]{Cache: fakecache.New("settings", &harvesterv1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: "server-version"}, Value: "v1.4.1"})})
	store := &statusStore{}
	inst := &equinixv1.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: "pool-abcdefgh", UID: "2f1c6a4e-1b2c-4d3e-8f40-5a6b7c8d9e0f", Finalizers: []string{equinixv1.FinalizerInstance}},
		Spec: equinixv1.InstanceSpec{PoolName: "pool", InstanceTemplate: equinixv1.InstanceTemplate{
			BootMode: equinixv1.BootModeReinstall,
			EquinixMetal: equinixv1.EquinixMetal{
				Plan:                "c3.small.x86",
				Metro:               "sg",
				BillingCycle:        "hourly",
				ManagementInterface: []string{"eth0"},
			},
		}},
	}
	return &createWorld{sim: sim, client: client, store: store, inst: inst, h: &harness{
		Provider: Provider{
			ctx:       context.Background(),
			settings:  Settings{MetalTimeout: createSettle / 2, CreateBackoff: time.Minute},
			clusterID: "cluster", joinInfo: join,
			ledger: ledger.New(fakecache.NewStore[*corev1.ConfigMap, *corev1.ConfigMapList]("configmaps"), ns),
		},
		statuses: store, recorder: record.NewFakeRecorder(100), poll: 100 * time.Millisecond,
	}}
}

// pass runs the device step as one reconcile would, on the status last
// stored (what a restarted controller reads).
func (w *createWorld) pass() (bool, error) {
	inst := w.inst
	if w.store.stored != nil {
		inst = w.store.stored
	}
	r := w.h.newRun(inst)
	done, err := r.ensureDevice(w.client)
	if perr := r.Persist(); err == nil {
		err = perr
	}
	return done, err
}

// creates counts the creates that reached the API.
func (w *createWorld) creates() int {
	return len(w.sim.RequestsFor(metalsim.OpCreateDevice))
}

// A create whose device was stored but never recorded — the status write
// after it failed, the controller died — and that was deleted before the
// next pass is never sent again: the Instance fails and its pool replaces
// it with a new Instance. Found by the fault campaign: the
// kube-apiserver was down when the create's answer came, the device was
// deleted out of band, and the restarted controller created a second device
// for the same Instance.
func TestCreateIsNeverSentTwiceForOneInstance(t *testing.T) {
	w := newCreateWorld(t)
	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultLatency, Latency: time.Millisecond, Operations: []string{metalsim.OpCreateDevice}})
	var created string
	t.Cleanup(w.sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceCreated {
			created = n.DeviceID
			w.store.down = true // the apiserver goes away while the create is answered
		}
	}))
	_, err := w.pass()
	require.Error(t, err, "the status write after the create should have failed")
	require.NotEmpty(t, created)
	require.NoError(t, w.sim.DeleteDeviceOutOfBand(created))

	w.store.down = false
	require.Eventually(t, func() bool {
		done, err := w.pass()
		require.NoError(t, err)
		require.False(t, done)
		return w.store.stored.Status.Status == equinixv1.PhaseFailed
	}, 5*time.Second, 50*time.Millisecond, "the Instance should fail once the settle wait is over")
	sent := w.creates()
	assert.Equal(t, 1, sent, "a second create was sent for the same Instance")
	st := w.store.stored.Status
	assert.Equal(t, equinixv1.PhaseFailed, st.Status)
	assert.Empty(t, st.InstanceID)
	c := conditions.Get(st.Conditions, equinixv1.InstanceDeviceCreated)
	require.NotNil(t, c)
	assert.Equal(t, equinixv1.ReasonDeviceGone, c.Reason)

	// Later passes, until the pool deletes the Instance, send nothing either.
	_, err = w.pass()
	require.NoError(t, err)
	sent = w.creates()
	assert.Equal(t, 1, sent)
}

// A refused create is sent again; one stored but unanswered is adopted in
// the same pass.
func TestLostOrRefusedCreates(t *testing.T) {
	cases := []struct {
		name  string
		fault metalsim.Fault
		// creates sent; the device is always stored once.
		sent   int
		reason string
	}{
		// The client holds further calls until the 429's Retry-After (1s).
		{name: "refused with 429", fault: metalsim.Fault{Kind: metalsim.FaultRateLimit, RetryAfter: time.Millisecond},
			sent: 2, reason: equinixv1.ReasonDeviceCreated},
		{name: "connection dropped after storing", fault: metalsim.Fault{Kind: metalsim.FaultDropConnection, AfterStore: true},
			sent: 1, reason: equinixv1.ReasonDeviceAdopted},
		{name: "5xx after storing", fault: metalsim.Fault{Kind: metalsim.FaultServerError, Status: 500, AfterStore: true},
			sent: 1, reason: equinixv1.ReasonDeviceAdopted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newCreateWorld(t)
			tc.fault.Operations, tc.fault.Count = []string{metalsim.OpCreateDevice}, 1
			w.sim.InjectFault(tc.fault)
			require.Eventually(t, func() bool {
				done, _ := w.pass()
				return done
			}, 5*time.Second, 50*time.Millisecond)
			w.assertAdopted(t, tc.sent, tc.reason)
		})
	}
}

func (w *createWorld) assertAdopted(t *testing.T, sent int, reason string) {
	t.Helper()
	assert.Equal(t, sent, w.creates(), "creates sent")
	assert.Len(t, w.sim.Devices(testProject), 1, "devices stored")
	st := w.store.stored.Status
	require.NotEmpty(t, st.InstanceID)
	c := conditions.Get(st.Conditions, equinixv1.InstanceDeviceCreated)
	require.NotNil(t, c)
	assert.Equal(t, reason, c.Reason)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
}

// A create the client gave up on is never sent again, even when its device
// is not listed right after: the API may store it later. Found by the fault
// campaign: a create outlived --metal-timeout, the list
// that followed came before the API stored the device, and the controller
// sent a second create for the same Instance. Here the simulator stores the
// device as the client gives up, so whether the first look sees it is a
// race; TestLateCreateIsAdopted fixes the order that lost the race.
func TestTimedOutCreateIsAdoptedNotResent(t *testing.T) {
	w := newCreateWorldTimeout(t, 200*time.Millisecond)
	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultLatency, Latency: time.Second, Count: 1,
		Operations: []string{metalsim.OpCreateDevice}})
	require.Eventually(t, func() bool {
		done, err := w.pass()
		require.NoError(t, err, "a lost answer is a wait, not an error")
		return done
	}, 5*time.Second, 50*time.Millisecond)
	w.assertAdopted(t, 1, equinixv1.ReasonDeviceAdopted)
}

// The API stores a device after the client gave up on its create, and later
// than the pass's own look: a pass within the settle wait adopts it.
func TestLateCreateIsAdopted(t *testing.T) {
	w := newCreateWorld(t)
	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultDropConnection, Count: 1, Operations: []string{metalsim.OpCreateDevice}})
	done, err := w.pass()
	require.NoError(t, err)
	require.False(t, done)
	c := conditions.Get(w.store.stored.Status.Conditions, equinixv1.InstanceDeviceCreated)
	require.NotNil(t, c)
	assert.Equal(t, equinixv1.ReasonCreateSent, c.Reason, "the intent stays after a lost answer")

	// A pass before the landing waits; it sends nothing.
	done, err = w.pass()
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, 1, w.creates(), "the create was sent again before its device appeared")

	// The late landing, with the tags the controller's create carried.
	r := w.h.newRun(w.store.stored)
	req, _, err := r.createRequest()
	require.NoError(t, err)
	_, err = w.client.CreateDevice(context.Background(), req)
	require.NoError(t, err)

	done, err = w.pass()
	require.NoError(t, err)
	assert.True(t, done)
	// Two creates reached the API: the controller's lost one and the landing.
	w.assertAdopted(t, 2, equinixv1.ReasonDeviceAdopted)
}

// A create whose answer was lost and whose device never appears is not sent
// again: after the settle wait the Instance fails, and its pool replaces it
// (without counting a provisioning failure).
func TestUnconfirmedCreateIsNeverResent(t *testing.T) {
	for name, fault := range map[string]metalsim.Fault{
		"5xx before storing":                {Kind: metalsim.FaultServerError, Status: 503},
		"connection dropped before storing": {Kind: metalsim.FaultDropConnection},
	} {
		t.Run(name, func(t *testing.T) {
			w := newCreateWorld(t)
			fault.Operations, fault.Count = []string{metalsim.OpCreateDevice}, 1
			w.sim.InjectFault(fault)
			done, err := w.pass()
			require.NoError(t, err)
			require.False(t, done)
			start := time.Now()
			require.Eventually(t, func() bool {
				_, err := w.pass()
				require.NoError(t, err)
				return w.store.stored.Status.Status == equinixv1.PhaseFailed
			}, 5*time.Second, 50*time.Millisecond)
			assert.GreaterOrEqual(t, time.Since(start), createSettle/2, "given up before the settle wait")
			assert.Equal(t, 1, w.creates(), "the create was sent again")
			assert.Empty(t, w.sim.Devices(testProject))
			st := w.store.stored.Status
			assert.Empty(t, st.InstanceID)
			c := conditions.Get(st.Conditions, equinixv1.InstanceDeviceCreated)
			require.NotNil(t, c)
			assert.Equal(t, equinixv1.ReasonDeviceGone, c.Reason)
		})
	}
}
