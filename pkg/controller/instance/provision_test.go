package instance

import (
	"context"
	"testing"
	"time"

	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
)

// recorder is a provider that records the steps the chain asks of it.
type recorder struct {
	steps   []string
	booting bool
	kept    bool
	stopped bool
}

func (p *recorder) Watch(context.Context, *common.Deps) error { return nil }
func (p *recorder) Names() provision.Names {
	return provision.Names{Instance: "instance-test", Pool: "instancepool-test"}
}
func (p *recorder) Traits() provision.Traits                 { return provision.Traits{} }
func (p *recorder) Handles(*equinixv1.InstanceTemplate) bool { return true }
func (p *recorder) Steps(*provision.Pass) provision.Steps    { return recordedSteps{p} }
func (p *recorder) Prepare(*equinixv1.InstanceStatus)        {}
func (p *recorder) Forget(string)                            { p.steps = append(p.steps, "Forget") }
func (p *recorder) CheckPool(*equinixv1.InstancePool, []*equinixv1.Instance) provision.PoolCheck {
	return provision.PoolCheck{}
}
func (p *recorder) Capacity(_ *equinixv1.InstancePool, _ []*equinixv1.Instance, want int) (int, error) {
	return want, nil
}

type recordedSteps struct{ p *recorder }

func (s recordedSteps) step(name string) { s.p.steps = append(s.p.steps, name) }

func (s recordedSteps) Provision() (bool, error) { s.step("Provision"); return s.p.booting, nil }
func (s recordedSteps) Follow() (bool, error)    { s.step("Follow"); return s.p.kept, nil }
func (s recordedSteps) Joined() error            { s.step("Joined"); return nil }
func (s recordedSteps) Remediate() error         { s.step("Remediate"); return nil }
func (s recordedSteps) Tend() error              { s.step("Tend"); return nil }
func (s recordedSteps) Releasing() string        { s.step("Releasing"); return "releasing" }
func (s recordedSteps) Stop() (bool, error)      { s.step("Stop"); return s.p.stopped, nil }
func (s recordedSteps) Free() error              { s.step("Free"); return nil }

// nodes is a Node controller over a cache; the embedded interface is nil.
type nodes struct {
	generic.NonNamespacedControllerInterface[*corev1.Node, *corev1.NodeList]
	cache fakecache.NonNamespaced[*corev1.Node]
}

func (n nodes) Cache() generic.NonNamespacedCacheInterface[*corev1.Node] { return n.cache }

// The chain owns the lifecycle and asks the provider for each step, in
// one order whatever the provider: a server on its way is followed
// through its node; a joined one is looked at by its provider, followed,
// kept and remediated; the provider tends it at the end of every pass; a
// release drains it, stops it, deletes its Node and console Secret and
// then frees what it held.
func TestTheChainAsksTheProviderForEachStepInOrder(t *testing.T) {
	ready := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "i", Labels: map[string]string{equinixv1.LabelInstance: "i"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	newWorld := func(nodeList ...*corev1.Node) (*Handler, *recorder) {
		p := &recorder{booting: true, kept: true, stopped: true}
		secrets := fakecache.NewStore[*corev1.Secret, *corev1.SecretList]("secrets")
		h := &Handler{ctx: context.Background(), provider: p, instances: &versionedStore{}, recorder: record.NewFakeRecorder(100),
			nodes:   nodes{cache: fakecache.NonNamespaced[*corev1.Node]{Cache: fakecache.New("nodes", nodeList...)}},
			secrets: secrets, settings: Settings{Namespace: "harvester-system", PollInterval: time.Second}}
		return h, p
	}
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "i", UID: "u", Finalizers: []string{"wrangler.cattle.io/instance-test-remove"}}}

	h, p := newWorld(ready)
	got, err := h.ProvisionInstance("i", inst)
	require.NoError(t, err)
	assert.Equal(t, []string{"Provision", "Joined", "Tend"}, p.steps, "the node is followed once the installer is on its way")
	assert.Equal(t, equinixv1.PhaseManaged, got.Status.Status)
	require.NotNil(t, got.Status.JoinedAt)

	p.steps = nil
	_, err = h.ProvisionInstance("i", got)
	require.NoError(t, err)
	assert.Equal(t, []string{"Follow", "Joined", "Remediate", "Tend"}, p.steps)

	p.steps, p.kept = nil, false
	_, err = h.ProvisionInstance("i", got)
	require.NoError(t, err)
	assert.Equal(t, []string{"Follow", "Tend"}, p.steps, "a server its provider found lost is not followed")

	h, p = newWorld()
	p.booting = false
	_, err = h.ProvisionInstance("i", inst)
	require.NoError(t, err)
	assert.Equal(t, []string{"Provision", "Tend"}, p.steps, "no node is followed before the installer is on its way")

	// (Its node is gone: nothing to drain.)
	h, p = newWorld()
	deleting := got.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Status.JoinedAt = nil
	_, err = h.RemoveInstance("i", deleting)
	require.NoError(t, err)
	assert.Equal(t, []string{"Releasing", "Stop", "Free", "Tend"}, p.steps)

	h, p = newWorld()
	p.stopped = false
	_, err = h.RemoveInstance("i", deleting)
	assert.ErrorIs(t, err, generic.ErrSkip, "the finalizer stays until the server is stopped")
	assert.Equal(t, []string{"Releasing", "Stop", "Tend"}, p.steps)

	_, err = h.ProvisionInstance("i", nil)
	require.NoError(t, err)
	assert.Equal(t, "Forget", p.steps[len(p.steps)-1])
}
