package equinixmetal

import (
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// installDiskRecheck is how often a refused install disk is looked at again;
// a pool edit brings the Instance back at once.
const installDiskRecheck = 10 * time.Minute

// installDiskRefused asks, before a paid server is created, whether the
// plan's install disk can take the version: Harvester's installer before
// v1.8.0 refuses a small disk even with skipchecks, and would do so only
// after the server booted and ran for nothing. Only a definite answer stops
// the create; a plans list that fails, or a plan that does not say, lets it
// go on. The plans list is kept an hour, for every Instance.
func (r *run) installDiskRefused(version string) bool {
	spec := r.Obj.Spec
	if r.p.plans == nil {
		return false
	}
	if _, enforced, err := harvester.MinInstallDiskBytes(version); err != nil || !enforced {
		return false
	}
	client, err := r.metalClient()
	if client == nil || err != nil {
		return false
	}
	plan, ok, err := r.p.plans.Plan(r.p.ctx, client, spec.Plan)
	if err != nil {
		logrus.Debugf("instance %s: could not list the plans to check the install disk, going on: %v", r.Obj.Name, err)
		return false
	}
	if !ok || spec.InstallDevice == "" {
		return false
	}
	err = harvester.CheckInstallDisk(plan, spec.InstallDevice, version)
	reason := ""
	switch {
	case errors.Is(err, harvester.ErrInstallDiskTooSmall):
		reason = equinixv1.ReasonInstallDiskTooSmall
	case errors.Is(err, harvester.ErrInstallDiskMissing):
		reason = equinixv1.ReasonInstallDiskMissing
	default:
		return false
	}
	r.holdCreate(reason, fmt.Sprintf("no server is created: %v (spec.instanceTemplate of the pool)", err), installDiskRecheck)
	return true
}

// holdCreate records why no server is created for the Instance yet, and
// looks again after recheck (a pool edit brings it back at once).
func (r *run) holdCreate(reason, message string, recheck time.Duration) {
	r.SetCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, reason, message)
	if r.Obj.Status.InstanceID == "" {
		r.SetPhase(equinixv1.PhasePending)
	}
	r.Requeue(recheck)
}
