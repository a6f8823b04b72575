package instancepool

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// checkInputs reports on the pool what its servers will need, without any Metal
// call: a readable credentials Secret and the join information. A refusal by
// the API is seen by the Instances and summarized here.
func (r *poolRun) checkInputs() {
	if r.Obj.Spec.Owned() {
		// Servers people own need no Metal credentials; they need free
		// servers.
		r.checkServers()
	} else {
		r.checkCredentials()
	}
	r.checkJoinInfo()
	r.checkInstallDisk()
}

// checkServers reports on a pool of servers people own whether its
// Instances find free servers: while one waits for one, the pool says so
// (a Warning Event once, as the condition turns False).
func (r *poolRun) checkServers() {
	if c := r.instanceCondition(equinixv1.InstanceServerClaimed, metav1.ConditionFalse, equinixv1.ReasonNoFreeServer); c != nil {
		r.SetCondition(equinixv1.PoolServersAvailable, metav1.ConditionFalse, equinixv1.ReasonNoFreeServer,
			fmt.Sprintf("%s; add servers (Inventories) that spec.servers.selector chooses, or lower count", c.Message))
		return
	}
	r.SetCondition(equinixv1.PoolServersAvailable, metav1.ConditionTrue, equinixv1.ReasonServersFree, "every server of the pool is claimed")
}

// checkCredentials reports on the Metal credentials of the pool.
func (r *poolRun) checkCredentials() {
	creds, err := r.h.credentials.For(r.Obj.Spec.CredentialsSecret)
	moved := ""
	if err == nil {
		moved = r.projectMoved(creds.ProjectID)
	}
	r.projectChanged = moved != ""
	if err != nil {
		r.SetCondition(equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsMissing, err.Error())
	} else if moved != "" {
		r.SetCondition(equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectChanged, moved)
	} else if refused := r.instanceCondition(equinixv1.InstanceCredentialsReady, metav1.ConditionFalse); refused != nil {
		r.SetCondition(equinixv1.PoolCredentialsReady, metav1.ConditionFalse, refused.Reason, refused.Message)
	} else {
		r.SetCondition(equinixv1.PoolCredentialsReady, metav1.ConditionTrue, equinixv1.ReasonCredentialsReady,
			fmt.Sprintf("Secret %s holds the Equinix Metal credentials", r.h.credentials.RefFor(r.Obj.Spec.CredentialsSecret)))
	}
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
	if c := r.instanceCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionFalse,
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

// instanceCondition returns the first active Instance condition with that
// status and, when reasons are given, one of them.
func (r *poolRun) instanceCondition(condType string, status metav1.ConditionStatus, reasons ...string) *metav1.Condition {
	for _, i := range active(r.insts) {
		c := conditions.Get(i.Status.Conditions, condType)
		if c != nil && c.Status == status && (len(reasons) == 0 || slices.Contains(reasons, c.Reason)) {
			return c
		}
	}
	return nil
}

// projectMoved describes the pool's servers that were made in another project
// than the one its credentials Secret names now, or returns "". Such a Secret
// was edited in place to point elsewhere: new servers would land in the new
// project while the old ones, which only the old project's credentials can
// release, stay billed in the old one. The pool creates none until it is
// resolved; moving a pool is done by giving it a new Secret, which rolls its
// servers out while the old ones keep theirs.
func (r *poolRun) projectMoved(project string) string {
	ref := r.h.credentials.RefFor(r.Obj.Spec.CredentialsSecret)
	byProject := map[string][]string{}
	// Instances being deleted count too: only the old project's
	// credentials can release their devices.
	for _, inst := range r.insts {
		recorded := inst.Status.ProjectID
		if recorded == "" || recorded == project || r.h.credentials.RefFor(inst.Spec.CredentialsSecret) != ref {
			continue
		}
		byProject[recorded] = append(byProject[recorded], inst.Name)
	}
	if len(byProject) == 0 {
		return ""
	}
	var parts []string
	for p, names := range byProject {
		sort.Strings(names)
		parts = append(parts, fmt.Sprintf("%s (%s)", p, strings.Join(names, ", ")))
	}
	sort.Strings(parts)
	return fmt.Sprintf("Secret %s now names Equinix Metal project %s, but servers of this pool were made in project %s; "+
		"only credentials of that project can release them, so no server is created until the Secret names it again "+
		"(to move the pool, give it a new credentialsSecret: its servers are rolled out into the new project)",
		ref, project, strings.Join(parts, "; "))
}
