package fencing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

var silent = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func unknownSince(at time.Time) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hv-dead"}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(at)}}
	return n
}

// Harvester's handling, when it acts, brings the fence forward to a
// minute before its own out-of-service taint, never before its drain
// taint; a grace period that ends sooner still rules.
func TestFenceAtFollowsHarvestersTaint(t *testing.T) {
	acting := nodeDown{policy: harvester.DefaultNodeDownPolicy, acts: true}
	node := unknownSince(silent)

	at, how := fenceAt(silent, 5*time.Minute, acting, node)
	assert.Equal(t, silent.Add(195*time.Second-harvesterLead), at, "a minute before Harvester's taint at 195 s")
	assert.Contains(t, how, "taints it out-of-service at 2026-03-01T12:03:15Z")

	at, how = fenceAt(silent, time.Minute, acting, node)
	assert.Equal(t, silent.Add(time.Minute), at, "the grace period ends first")
	assert.Empty(t, how)

	short := nodeDown{policy: harvester.NodeDownPolicy{Enabled: true, Period: 20 * time.Second, MigrationTimeout: 10 * time.Second}, acts: true}
	at, _ = fenceAt(silent, 5*time.Minute, short, node)
	assert.Equal(t, silent.Add(20*time.Second), at, "never before Harvester's own period")

	at, how = fenceAt(silent, 5*time.Minute, nodeDown{policy: harvester.DefaultNodeDownPolicy, why: "upgrade"}, node)
	assert.Equal(t, silent.Add(5*time.Minute), at, "Harvester stands back: the grace period alone")
	assert.Empty(t, how)

	notReady := node.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	at, _ = fenceAt(silent, 5*time.Minute, acting, notReady)
	assert.Equal(t, silent.Add(5*time.Minute), at, "Harvester leaves a kubelet that reports NotReady alone")
}

func TestHarvesterViewRead(t *testing.T) {
	ctx := context.Background()
	setting := func(value string, err error) func(context.Context, string) (*harvesterv1beta1.Setting, error) {
		return func(_ context.Context, name string) (*harvesterv1beta1.Setting, error) {
			assert.Equal(t, harvester.VMForceResetPolicySettingName, name)
			if err != nil {
				return nil, err
			}
			return &harvesterv1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, nil
		}
	}
	upgrades := func(labels ...map[string]string) func(context.Context) (*metav1.PartialObjectMetadataList, error) {
		return func(context.Context) (*metav1.PartialObjectMetadataList, error) {
			list := &metav1.PartialObjectMetadataList{}
			for i, l := range labels {
				list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: []string{"hvst-upgrade-b", "hvst-upgrade-a"}[i], Labels: l}})
			}
			return list, nil
		}
	}
	on := `{"enable":true,"period":15,"vmMigrationTimeout":180}`
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "harvesterhci.io", Resource: "upgrades"}, "")

	d := HarvesterView{Setting: setting(on, nil), Upgrades: upgrades(map[string]string{harvester.LabelUpgradeState: harvester.UpgradeSucceeded})}.read(ctx)
	assert.True(t, d.acts)
	assert.Empty(t, d.upgrade)

	d = HarvesterView{Setting: setting(on, nil), Upgrades: upgrades(map[string]string{harvester.LabelUpgradeState: harvester.UpgradeSucceeded}, nil)}.read(ctx)
	assert.False(t, d.acts)
	assert.Equal(t, "hvst-upgrade-a", d.upgrade)
	assert.Contains(t, d.why, "upgrade hvst-upgrade-a is under way")
	assert.Equal(t, equinixv1.ReasonFenceHeldUpgrade, upgrading(d).reason)

	d = HarvesterView{Setting: setting(on, nil), Upgrades: func(context.Context) (*metav1.PartialObjectMetadataList, error) { return nil, gone }}.read(ctx)
	assert.True(t, d.acts, "no Upgrade kind: no upgrade")
	assert.Nil(t, upgrading(d))

	d = HarvesterView{Setting: setting(on, nil), Upgrades: func(context.Context) (*metav1.PartialObjectMetadataList, error) {
		return nil, errors.New("connection refused")
	}}.read(ctx)
	assert.False(t, d.acts)
	assert.Contains(t, upgrading(d).message, "cannot be told (listing Harvester's upgrades: connection refused)", "an upgrade that cannot be ruled out holds the fence")

	d = HarvesterView{Setting: setting("", apierrors.NewNotFound(schema.GroupResource{Group: "harvesterhci.io", Resource: "settings"}, "x"))}.read(ctx)
	assert.False(t, d.acts)
	assert.Contains(t, d.why, "not a Harvester cluster")

	d = HarvesterView{Setting: setting(`{"enable":false,"period":15}`, nil)}.read(ctx)
	assert.False(t, d.acts)
	assert.Contains(t, d.why, "off")

	d = HarvesterView{Setting: setting(`{"enable":true}`, nil)}.read(ctx)
	assert.False(t, d.acts, "Harvester does not act on a period of zero")

	d = HarvesterView{}.read(ctx)
	assert.False(t, d.acts)
}

func tainted(n *corev1.Node, value string) *corev1.Node {
	n = n.DeepCopy()
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: value, Effect: corev1.TaintEffectNoExecute})
	return n
}

// One truth for the fencer and the pools: an out-of-service taint is a
// fence only where the BMC confirmed its server off.
func TestTaintedNotFenced(t *testing.T) {
	node := unknownSince(silent)
	fencedTrue := []metav1.Condition{{Type: equinixv1.BMCFenced, Status: metav1.ConditionTrue, Reason: equinixv1.ReasonFenced}}
	sending := []metav1.Condition{{Type: equinixv1.BMCFenced, Status: metav1.ConditionUnknown, Reason: equinixv1.ReasonFencePowerOffSent}}
	reads := 0
	power := func(state machine.PowerState, err error) PowerReader {
		return func() (machine.PowerState, error) { reads++; return state, err }
	}

	assert.Empty(t, TaintedNotFenced(nil, node, power(machine.PowerOn, nil)), "no taint")
	assert.Zero(t, reads, "no taint: the BMC is not asked")
	harvesters := tainted(node, "")
	assert.Contains(t, TaintedNotFenced(nil, harvesters, power(machine.PowerOn, nil)), "while its BMC shows its server on")
	assert.Contains(t, TaintedNotFenced(sending, harvesters, power(machine.PowerOn, nil)), "shows its server on",
		"a power-off on its way is not a fence yet")
	assert.Empty(t, TaintedNotFenced(nil, harvesters, power(machine.PowerOff, nil)), "the BMC shows it off")
	assert.Contains(t, TaintedNotFenced(nil, harvesters, power("", errors.New("i/o timeout"))), "cannot be read (i/o timeout)")
	assert.Contains(t, TaintedNotFenced(nil, harvesters, nil), "its BMC cannot be used")
	reads = 0
	assert.Empty(t, TaintedNotFenced(fencedTrue, harvesters, power(machine.PowerOn, nil)), "fenced: the fencer confirmed it off")
	assert.Zero(t, reads)

	assert.True(t, carriesOwnTaint(tainted(node, equinixv1.TaintOutOfServiceValue)))
	assert.False(t, carriesOwnTaint(harvesters), "Harvester's taint has no value")
	assert.True(t, outOfServiceTainted(harvesters))
}

// The state Harvester's handler cannot leave: a silent node with its drain
// taint and without its Drained condition.
func TestHarvesterDrainStuck(t *testing.T) {
	node := unknownSince(silent)
	assert.False(t, harvesterDrainStuck(node), "no drain taint")
	drained := node.DeepCopy()
	drained.Spec.Taints = []corev1.Taint{{Key: harvester.TaintKubevirtDrain, Effect: corev1.TaintEffectNoSchedule}}
	assert.True(t, harvesterDrainStuck(drained))
	withCond := drained.DeepCopy()
	withCond.Status.Conditions = append(withCond.Status.Conditions, corev1.NodeCondition{Type: harvester.NodeConditionDrained, Status: corev1.ConditionFalse})
	assert.False(t, harvesterDrainStuck(withCond))
	ready := drained.DeepCopy()
	ready.Status.Conditions[0].Status = corev1.ConditionTrue
	assert.False(t, harvesterDrainStuck(ready), "Harvester takes the taint away from a Ready node, and fails on nothing")
}
