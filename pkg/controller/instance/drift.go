package instance

import (
	"fmt"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// MarkDeviceGone records on a joined Instance that its device no longer exists
// (deleted outside the addon, or a spot server reclaimed), which a joined
// Instance otherwise would not notice: it makes no Metal call per reconcile.
// The pool then replaces it.
func (h *Handler) MarkDeviceGone(inst *equinixv1.Instance) error {
	r := h.newRun(inst)
	r.deviceGone(fmt.Sprintf("device %s no longer exists in Equinix Metal; the pool replaces this server", inst.Status.InstanceID))
	_, err := r.Finish(nil)
	return err
}
