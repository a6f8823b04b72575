package harvester

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
)

func policySetting(value, def string) *harvesterv1beta1.Setting {
	s := &harvesterv1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: VMForceResetPolicySettingName}, Value: value}
	s.Default = def
	return s
}

// Harvester's own default, written by its settings provider at start.
const harvesterDefault = `{"enable":true,"period":15,"vmMigrationTimeout":180}`

func TestParseNodeDownPolicy(t *testing.T) {
	for _, tt := range []struct {
		name, value, def string
		want             NodeDownPolicy
		err              string
	}{
		{name: "Harvester's default", def: harvesterDefault, want: DefaultNodeDownPolicy},
		{name: "the value wins over the default", value: `{"enable":true,"period":300,"vmMigrationTimeout":60}`, def: harvesterDefault,
			want: NodeDownPolicy{Enabled: true, Period: 5 * time.Minute, MigrationTimeout: time.Minute}},
		{name: "a timeout of zero is 180 seconds", value: `{"enable":true,"period":30}`,
			want: NodeDownPolicy{Enabled: true, Period: 30 * time.Second, MigrationTimeout: 3 * time.Minute}},
		{name: "off", value: `{"enable":false,"period":15}`, want: NodeDownPolicy{Period: 15 * time.Second, MigrationTimeout: 3 * time.Minute}},
		{name: "no period", value: `{"enable":true,"period":0}`, err: "period 0 is not above zero"},
		{name: "a timeout below zero", value: `{"enable":true,"period":5,"vmMigrationTimeout":-1}`, err: "vmMigrationTimeout -1 is below zero"},
		{name: "not JSON", value: `on`, err: "is not the JSON Harvester reads"},
		{name: "empty", err: "is not the JSON Harvester reads"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNodeDownPolicy(policySetting(tt.value, tt.def))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNodeDownSchedule(t *testing.T) {
	silent := created.Add(time.Hour)
	p := DefaultNodeDownPolicy
	readyAs := func(status corev1.ConditionStatus, extra ...corev1.NodeCondition) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		n.Status.Conditions = append([]corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
			LastTransitionTime: metav1.NewTime(silent)}}, extra...)
		return n
	}

	s, ok := p.Schedule(readyAs(corev1.ConditionUnknown))
	require.True(t, ok, "a silent kubelet's node is Harvester's to taint")
	assert.Equal(t, silent.Add(15*time.Second), s.DrainAt)
	assert.Equal(t, silent.Add(195*time.Second), s.OutOfServiceAt)

	drained := corev1.NodeCondition{Type: NodeConditionDrained, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(silent.Add(40 * time.Second))}
	s, ok = p.Schedule(readyAs(corev1.ConditionUnknown, drained))
	require.True(t, ok)
	assert.Equal(t, silent.Add(220*time.Second), s.OutOfServiceAt, "counted from the Drained condition Harvester wrote, as it does")

	drained.Status = corev1.ConditionTrue
	s, ok = p.Schedule(readyAs(corev1.ConditionUnknown, drained))
	require.True(t, ok)
	assert.Equal(t, silent.Add(40*time.Second), s.OutOfServiceAt, "Drained True: the taint went on then")

	_, ok = p.Schedule(readyAs(corev1.ConditionFalse))
	assert.False(t, ok, "a kubelet that reports NotReady is left alone by Harvester")
	_, ok = p.Schedule(readyAs(corev1.ConditionTrue))
	assert.False(t, ok)
	_, ok = NodeDownPolicy{Period: time.Second}.Schedule(readyAs(corev1.ConditionUnknown))
	assert.False(t, ok, "the policy is off")
	_, ok = p.Schedule(&corev1.Node{})
	assert.False(t, ok, "no Ready condition")
}

func TestUpgradeUnderWay(t *testing.T) {
	assert.True(t, UpgradeUnderWay(nil), "an Upgrade without a state is under way, as Harvester's selector counts it")
	assert.True(t, UpgradeUnderWay(map[string]string{LabelUpgradeState: "UpgradingNodes"}))
	assert.False(t, UpgradeUnderWay(map[string]string{LabelUpgradeState: UpgradeSucceeded}))
	assert.False(t, UpgradeUnderWay(map[string]string{LabelUpgradeState: UpgradeFailed}))
}
