package instancepool

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// checkInputs reports on the pool what its servers will need, without any
// call: what the provider tells (its credentials, its free servers) and
// the join information. A refusal seen by the Instances is summarized here.
func (r *poolRun) checkInputs() {
	check := r.h.provider.CheckPool(r.Obj, r.insts)
	for _, c := range check.Conditions {
		r.SetCondition(c.Type, c.Status, c.Reason, c.Message)
	}
	r.holdCreates = check.HoldCreates
	r.checkJoinInfo()
	r.checkInstallDisk()
}

// checkJoinInfo reports whether what a server needs to join is known.
func (r *poolRun) checkJoinInfo() {
	_, joinErr := r.h.joinInfo.Join()
	version := ""
	if joinErr == nil {
		version, joinErr = r.h.joinInfo.Version(r.Obj.Spec.HarvesterVersion)
	}
	if joinErr != nil {
		r.SetCondition(equinixv1.PoolJoinInfoReady, metav1.ConditionFalse, equinixv1.ReasonJoinInfoMissing, joinErr.Error())
	} else if missing := r.releaseMissing(version); missing != "" {
		r.SetCondition(equinixv1.PoolJoinInfoReady, metav1.ConditionFalse, equinixv1.ReasonReleaseNotFound, missing)
	} else {
		r.SetCondition(equinixv1.PoolJoinInfoReady, metav1.ConditionTrue, equinixv1.ReasonJoinInfoReady,
			"the cluster URL, join token and Harvester version are known")
	}
}

// checkInstallDisk reports on the pool what its servers found before their
// creates: an install disk the version's installer refuses holds every one.
func (r *poolRun) checkInstallDisk() {
	if c := provision.InstanceCondition(r.insts, equinixv1.InstanceInstallConfigured, metav1.ConditionFalse,
		equinixv1.ReasonInstallDiskTooSmall, equinixv1.ReasonInstallDiskMissing); c != nil {
		r.SetCondition(equinixv1.PoolInstallDiskFits, metav1.ConditionFalse, c.Reason, c.Message)
		return
	}
	conditions.Remove(&r.Obj.Status.Conditions, equinixv1.PoolInstallDiskFits)
}

// releaseMissing says why the pool's release cannot be installed, when its
// ISO is known not to exist; "" when it exists or the check cannot tell.
func (r *poolRun) releaseMissing(version string) string {
	if r.h.releases == nil {
		return ""
	}
	iso, err := harvester.ISOURL(version, r.Obj.Spec.ISOURL)
	if err != nil {
		return ""
	}
	if err := r.h.releases.Check(r.h.ctx, iso); errors.Is(err, harvester.ErrReleaseMissing) {
		return fmt.Sprintf("the installer ISO of Harvester %s is not there (%v), so no server is created to install it: set spec.harvesterVersion (or spec.isoURL) to a published release", version, err)
	}
	return ""
}
