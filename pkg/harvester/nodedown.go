package harvester

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
)

// Harvester's own node-down handling (its node-down controller, from
// v1.7): a node whose Ready condition is Unknown (its kubelet went silent)
// gets KubeVirt's drain taint once the period of the vm-force-reset-policy
// Setting has passed, with the node condition Drained False; once
// vmMigrationTimeout has passed after that condition's transition it gets
// node.kubernetes.io/out-of-service:NoExecute (no value), which deletes the
// node's pods and releases their volumes. It does this without knowing
// whether the server is off, and takes both taints away (by key, whoever
// put them there) once the node is Ready again. A node whose kubelet
// reports Ready False is left alone, as is every node while a Harvester
// upgrade is under way. (v1.4 to v1.6 force-deleted the VMs' pods and
// their VolumeAttachments after the period instead, for Ready False or
// Unknown.)
const (
	// VMForceResetPolicySettingName is the Setting that turns the handling
	// on and times it.
	VMForceResetPolicySettingName = "vm-force-reset-policy"
	// TaintKubevirtDrain is KubeVirt's drain taint (NoSchedule), the first
	// step: KubeVirt tries to move the node's VMs.
	TaintKubevirtDrain = "kubevirt.io/drain"
	// NodeConditionDrained is the node condition Harvester keeps while it
	// handles a dead node: False once the drain taint is on (its transition
	// starts the migration timeout), True once the out-of-service taint is.
	NodeConditionDrained corev1.NodeConditionType = "Drained"
	// DrainedReasonDraining and DrainedMessage are what Harvester writes
	// in Drained while it is False.
	DrainedReasonDraining = "HarvesterNodeIsDraining"
	DrainedMessage        = "Node is draining due to kubelet/node not ready."
	// UpgradeNamespace holds Harvester's Upgrades.
	UpgradeNamespace = "harvester-system"
	// LabelUpgradeState is an Upgrade's state; one without it, or in a
	// state other than UpgradeSucceeded or UpgradeFailed, is under way.
	LabelUpgradeState = "harvesterhci.io/upgradeState"
	UpgradeSucceeded  = "Succeeded"
	UpgradeFailed     = "Failed"
	// defaultMigrationTimeout is what Harvester takes for a
	// vmMigrationTimeout of zero or none.
	defaultMigrationTimeout = 180 * time.Second
)

// DefaultNodeDownPolicy is the Setting's default in Harvester: on, a
// 15-second period, a 180-second migration timeout.
var DefaultNodeDownPolicy = NodeDownPolicy{Enabled: true, Period: 15 * time.Second, MigrationTimeout: defaultMigrationTimeout}

// NodeDownPolicy is the vm-force-reset-policy Setting.
type NodeDownPolicy struct {
	Enabled bool
	// Period is how long a node's Ready stays Unknown before the drain taint.
	Period time.Duration
	// MigrationTimeout is how long after the drain taint the out-of-service
	// taint follows.
	MigrationTimeout time.Duration
}

func (p NodeDownPolicy) String() string {
	if !p.Enabled {
		return fmt.Sprintf("%s: off", VMForceResetPolicySettingName)
	}
	return fmt.Sprintf("%s: period %s, vmMigrationTimeout %s", VMForceResetPolicySettingName, p.Period, p.MigrationTimeout)
}

// UpgradeUnderWay reports whether an Upgrade's state label says it is
// under way, as Harvester's handler selects them.
func UpgradeUnderWay(labels map[string]string) bool {
	state, ok := labels[LabelUpgradeState]
	return !ok || state != UpgradeSucceeded && state != UpgradeFailed
}

// ParseNodeDownPolicy reads the Setting's value (else its default) as
// Harvester's handler does, with its rules: a period above zero, a
// migration timeout not below zero (zero means 180 seconds). Harvester
// does nothing for a value it cannot read, so neither is an error's
// policy enabled.
func ParseNodeDownPolicy(s *harvesterv1beta1.Setting) (NodeDownPolicy, error) {
	value := strings.TrimSpace(s.EffectiveValue())
	var raw struct {
		Enable             bool  `json:"enable"`
		Period             int64 `json:"period"`
		VMMigrationTimeout int64 `json:"vmMigrationTimeout"`
	}
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return NodeDownPolicy{}, fmt.Errorf("setting %s: %q is not the JSON Harvester reads: %w", VMForceResetPolicySettingName, value, err)
	}
	if raw.Period <= 0 {
		return NodeDownPolicy{}, fmt.Errorf("setting %s: period %d is not above zero, so Harvester does not act on it", VMForceResetPolicySettingName, raw.Period)
	}
	if raw.VMMigrationTimeout < 0 {
		return NodeDownPolicy{}, fmt.Errorf("setting %s: vmMigrationTimeout %d is below zero, so Harvester does not act on it",
			VMForceResetPolicySettingName, raw.VMMigrationTimeout)
	}
	p := NodeDownPolicy{Enabled: raw.Enable, Period: time.Duration(raw.Period) * time.Second,
		MigrationTimeout: time.Duration(raw.VMMigrationTimeout) * time.Second}
	if p.MigrationTimeout == 0 {
		p.MigrationTimeout = defaultMigrationTimeout
	}
	return p, nil
}

// NodeDownSchedule is when Harvester's handler taints a dead node.
type NodeDownSchedule struct {
	// DrainAt is when the drain taint goes on (or went on).
	DrainAt time.Time
	// OutOfServiceAt is when the out-of-service taint goes on: counted
	// from the Drained condition's transition to False once Harvester
	// wrote it, else from DrainAt; once Drained is True, when it did.
	OutOfServiceAt time.Time
}

// Schedule says when Harvester taints node under the policy, and whether
// it will at all: only a node whose Ready condition is Unknown, with the
// policy on (the caller knows whether an upgrade holds Harvester back).
func (p NodeDownPolicy) Schedule(node *corev1.Node) (NodeDownSchedule, bool) {
	ready := NodeReadyCondition(node)
	if !p.Enabled || ready == nil || ready.Status != corev1.ConditionUnknown {
		return NodeDownSchedule{}, false
	}
	s := NodeDownSchedule{DrainAt: ready.LastTransitionTime.Add(p.Period)}
	s.OutOfServiceAt = s.DrainAt.Add(p.MigrationTimeout)
	for _, c := range node.Status.Conditions {
		if c.Type != NodeConditionDrained || c.LastTransitionTime.IsZero() {
			continue
		}
		switch c.Status {
		case corev1.ConditionFalse:
			s.OutOfServiceAt = c.LastTransitionTime.Add(p.MigrationTimeout)
		case corev1.ConditionTrue:
			s.OutOfServiceAt = c.LastTransitionTime.Time
		}
	}
	return s, true
}
