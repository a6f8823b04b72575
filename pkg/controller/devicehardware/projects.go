package devicehardware

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/harvester/harvester-equinix-addon/pkg/machine/metaldriver"
)

// projects lists the Metal projects the addon's servers live in, each with
// credentials that reach it, for the driver's poll. A project counts while
// an Instance has a device there; it is watched for termination times
// while one of them is a spot server.
func (h *Handler) projects() []metaldriver.Project {
	insts, err := h.instances.Cache().List(labels.Everything())
	if err != nil {
		return nil
	}
	byID := map[string]metaldriver.Project{}
	for _, inst := range insts {
		project := inst.Status.ProjectID
		if inst.Status.InstanceID == "" || project == "" {
			continue
		}
		p, seen := byID[project]
		if !seen {
			creds, err := h.credentials.For(inst.Spec.CredentialsSecret)
			if err != nil || creds.ProjectID != project {
				// Its Secret names another project now: the Instance's
				// own conditions say so; another Instance of the
				// project may still reach it.
				continue
			}
			p.Credentials = creds
		}
		p.WatchTerminations = p.WatchTerminations || inst.Spec.Spot != nil
		byID[project] = p
	}
	out := make([]metaldriver.Project, 0, len(byID))
	for _, p := range byID {
		out = append(out, p)
	}
	return out
}

// wake re-runs the Instances of devices with news.
func (h *Handler) wake(deviceIDs []string) {
	for _, id := range deviceIDs {
		insts, err := h.instances.Cache().GetByIndex(indexByDevice, id)
		if err != nil {
			continue
		}
		for _, inst := range insts {
			h.instances.EnqueueAfter(inst.Name, 0)
		}
	}
}
