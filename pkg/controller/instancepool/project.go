package instancepool

import (
	"fmt"
	"sort"
	"strings"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// projectMoved describes the pool's servers that were made in another project
// than the one its credentials Secret names now, or returns "". Such a Secret
// was edited in place to point elsewhere: new servers would land in the new
// project while the old ones, which only the old project's credentials can
// release, stay billed in the old one. The pool creates none until it is
// resolved; moving a pool is done by giving it a new Secret, which rolls its
// servers out while the old ones keep theirs.
func (r *poolRun) projectMoved(project string) string {
	ref := r.h.credentials.RefFor(r.pool.Spec.CredentialsSecret)
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

// serverWaits says what keeps the pool's servers that are not managed from
// progressing, most common first: the first condition each one has that is
// not True, with the message of one of them.
func serverWaits(insts []*v1.Instance) string {
	type group struct {
		n       int
		message string
	}
	groups := map[string]*group{}
	for _, i := range insts {
		if i.DeletionTimestamp != nil || i.Status.Status == v1.PhaseManaged {
			continue
		}
		reason, message := blocker(i)
		if reason == "" {
			continue
		}
		g := groups[reason]
		if g == nil {
			g = &group{message: message}
			groups[reason] = g
		}
		g.n++
	}
	reasons := make([]string, 0, len(groups))
	for r := range groups {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(a, b int) bool {
		if groups[reasons[a]].n != groups[reasons[b]].n {
			return groups[reasons[a]].n > groups[reasons[b]].n
		}
		return reasons[a] < reasons[b]
	})
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		if !v1.IsWarning(r) {
			// Progress needs no explanation, and its changing message
			// (a percentage) would rewrite the pool's status at every poll.
			parts = append(parts, fmt.Sprintf("%d %s", groups[r].n, r))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d waiting on %s (%s)", groups[r].n, r, groups[r].message))
	}
	return strings.Join(parts, "; ")
}

// blockingConditions are the Instance conditions, in chain order, whose
// not-True state says why a server waits.
var blockingConditions = []string{
	v1.InstanceCredentialsReady, v1.InstanceDeviceCreated, v1.InstanceInstallConfigured, v1.InstanceDeviceActive,
	v1.InstanceNetworkConfigured, v1.InstanceNodeJoined, v1.InstanceReady,
}

func blocker(inst *v1.Instance) (reason, message string) {
	for _, t := range blockingConditions {
		for _, c := range inst.Status.Conditions {
			if c.Type == t && c.Status != "True" {
				return c.Reason, c.Message
			}
		}
	}
	return "", ""
}
