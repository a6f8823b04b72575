package fencing

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// harvesterLead is how long before Harvester's own out-of-service taint
// is due the fence starts: a power-off and the reads that see it take
// seconds, and a minute leaves room for a slow BMC and a second read.
const harvesterLead = time.Minute

// HarvesterView reads what Harvester's own node-down handling does: its
// Setting, read from the API server by name, and its Upgrades, listed by
// metadata (their state is a label). Either is nil where it cannot be read.
type HarvesterView struct {
	Setting  func(ctx context.Context, name string) (*harvesterv1beta1.Setting, error)
	Upgrades func(ctx context.Context) (*metav1.PartialObjectMetadataList, error)
}

// nodeDown is Harvester's node-down handling as it stands: its policy,
// whether it acts, and if not, why; and the Upgrade under way, if any.
type nodeDown struct {
	policy harvester.NodeDownPolicy
	acts   bool
	why    string
	// upgrade names the Harvester Upgrade under way ("" for none);
	// upgradeErr says why that could not be told.
	upgrade    string
	upgradeErr error
}

// read asks the API server: two reads, made only for a NotReady node that
// is not fenced yet.
func (v HarvesterView) read(ctx context.Context) nodeDown {
	var d nodeDown
	d.upgrade, d.upgradeErr = v.upgradeUnderWay(ctx)
	if v.Setting == nil {
		d.why = "Harvester's settings are not read"
		return d
	}
	s, err := v.Setting(ctx, harvester.VMForceResetPolicySettingName)
	switch {
	case apierrors.IsNotFound(err):
		d.why = fmt.Sprintf("there is no Setting %s (not a Harvester cluster)", harvester.VMForceResetPolicySettingName)
		return d
	case err != nil:
		d.why = fmt.Sprintf("the Setting %s cannot be read (%s)", harvester.VMForceResetPolicySettingName, failure.Message(err))
		return d
	}
	if d.policy, err = harvester.ParseNodeDownPolicy(s); err != nil {
		d.why = err.Error()
		return d
	}
	switch {
	case !d.policy.Enabled:
		d.why = d.policy.String()
	case d.upgradeErr != nil:
		d.why = "whether a Harvester upgrade is under way cannot be told"
	case d.upgrade != "":
		d.why = fmt.Sprintf("Harvester upgrade %s is under way, during which Harvester's handling stands back", d.upgrade)
	default:
		d.acts = true
	}
	return d
}

// upgradeUnderWay names an Upgrade under way, as Harvester's handler
// selects them; none when the kind does not exist.
func (v HarvesterView) upgradeUnderWay(ctx context.Context) (string, error) {
	if v.Upgrades == nil {
		return "", nil
	}
	list, err := v.Upgrades(ctx)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("listing Harvester's upgrades: %w", err)
	}
	var under []string
	for _, u := range list.Items {
		if harvester.UpgradeUnderWay(u.Labels) {
			under = append(under, u.Name)
		}
	}
	if len(under) == 0 {
		return "", nil
	}
	sort.Strings(under)
	return under[0], nil
}

// fenceAt is when a node NotReady since since is fenced: at the end of
// the grace period, or, where Harvester's own handling will taint it
// out-of-service sooner, harvesterLead before that taint is due (never
// before Harvester's drain taint, the end of its own period), so that the
// server is off before or as the taint lands. how says why when
// Harvester's timing decides.
func fenceAt(since time.Time, grace time.Duration, d nodeDown, node *corev1.Node) (at time.Time, how string) {
	end := since.Add(grace)
	if !d.acts {
		return end, ""
	}
	sched, ok := d.policy.Schedule(node)
	if !ok {
		return end, ""
	}
	at = sched.OutOfServiceAt.Add(-harvesterLead)
	if at.Before(sched.DrainAt) {
		at = sched.DrainAt
	}
	if !at.Before(end) {
		return end, ""
	}
	return at, fmt.Sprintf("Harvester's node-down handling (%s) taints it out-of-service at %s, without knowing whether its server is off, "+
		"so the fence comes before that, sooner than the grace period", d.policy, stamp(sched.OutOfServiceAt))
}
