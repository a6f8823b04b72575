package equinixmetal

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
)

// CheckPool reports on the pool's Metal credentials, without any Metal
// call: a readable Secret that names the project the pool's servers were
// made in. A refusal by the API is seen by the Instances and summarized
// here. No server is created while the Secret names another project.
func (p *Provider) CheckPool(pool *equinixv1.InstancePool, insts []*equinixv1.Instance) provision.PoolCheck {
	creds, err := p.credentials.For(pool.Spec.CredentialsSecret)
	moved := ""
	if err == nil {
		moved = p.projectMoved(pool, insts, creds.ProjectID)
	}
	cond := provision.Condition{Type: equinixv1.PoolCredentialsReady, Status: metav1.ConditionFalse}
	if err != nil {
		cond.Reason, cond.Message = equinixv1.ReasonCredentialsMissing, err.Error()
	} else if moved != "" {
		cond.Reason, cond.Message = equinixv1.ReasonProjectChanged, moved
	} else if refused := provision.InstanceCondition(insts, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse); refused != nil {
		cond.Reason, cond.Message = refused.Reason, refused.Message
	} else {
		cond = provision.Condition{Type: equinixv1.PoolCredentialsReady, Status: metav1.ConditionTrue, Reason: equinixv1.ReasonCredentialsReady,
			Message: fmt.Sprintf("Secret %s holds the Equinix Metal credentials", p.credentials.RefFor(pool.Spec.CredentialsSecret))}
	}
	return provision.PoolCheck{Conditions: []provision.Condition{cond}, HoldCreates: moved != ""}
}

// projectMoved describes the pool's servers that were made in another project
// than the one its credentials Secret names now, or returns "". Such a Secret
// was edited in place to point elsewhere: new servers would land in the new
// project while the old ones, which only the old project's credentials can
// release, stay billed in the old one. The pool creates none until it is
// resolved; moving a pool is done by giving it a new Secret, which rolls its
// servers out while the old ones keep theirs.
func (p *Provider) projectMoved(pool *equinixv1.InstancePool, insts []*equinixv1.Instance, project string) string {
	ref := p.credentials.RefFor(pool.Spec.CredentialsSecret)
	byProject := map[string][]string{}
	// Instances being deleted count too: only the old project's
	// credentials can release their devices.
	for _, inst := range insts {
		recorded := inst.Status.ProjectID
		if recorded == "" || recorded == project || p.credentials.RefFor(inst.Spec.CredentialsSecret) != ref {
			continue
		}
		byProject[recorded] = append(byProject[recorded], inst.Name)
	}
	if len(byProject) == 0 {
		return ""
	}
	var parts []string
	for proj, names := range byProject {
		sort.Strings(names)
		parts = append(parts, fmt.Sprintf("%s (%s)", proj, strings.Join(names, ", ")))
	}
	sort.Strings(parts)
	return fmt.Sprintf("Secret %s now names Equinix Metal project %s, but servers of this pool were made in project %s; "+
		"only credentials of that project can release them, so no server is created until the Secret names it again "+
		"(to move the pool, give it a new credentialsSecret: its servers are rolled out into the new project)",
		ref, project, strings.Join(parts, "; "))
}
