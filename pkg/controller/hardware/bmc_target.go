package hardware

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/reconcile"
)

// bmcTarget is a BMCInventory: a node the addon did not provision, whose
// server a BMC manages.
type bmcTarget struct {
	objectPass[*v1.BMCInventory, v1.BMCInventoryStatus]
}

// newBMCTarget starts a pass over inv; every status it writes is recorded
// in bmcWritten, so that the next pass reads it even before the cache
// does.
func (h *Handler) newBMCTarget(inv *v1.BMCInventory) *bmcTarget {
	kind := reconcile.Kind[*v1.BMCInventory, v1.BMCInventoryStatus]{
		Name:         "BMCInventory",
		Status:       func(i *v1.BMCInventory) *v1.BMCInventoryStatus { return &i.Status },
		Conditions:   func(i *v1.BMCInventory) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *v1.BMCInventory) (*v1.BMCInventory, error) { return h.bmcInventories.UpdateStatus(i) },
		EnqueueAfter: func(name string, after time.Duration) { h.bmcInventories.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
		Wrote:        func(_ *v1.BMCInventoryStatus, written *v1.BMCInventory) { h.bmcWritten.Wrote(written) },
	}
	return &bmcTarget{objectPass[*v1.BMCInventory, v1.BMCInventoryStatus]{reconcile.NewPass(kind, inv), "BMCInventory"}}
}

func (t *bmcTarget) powerSpec() v1.PowerSpec      { return t.Obj.Spec.PowerSpec }
func (t *bmcTarget) hardware() *v1.HardwareStatus { return &t.Obj.Status.HardwareStatus }

// bmcPowerRecheck is the least time between two checks of a power
// action's effect on a BMC, whatever --poll-interval says (a second in a
// development setup). A server takes seconds to switch its power, a BMC
// reports it no sooner, and one check every 10 s is six reads a minute on
// the one session kept meanwhile, which no BMC minds; a check a second was
// 60 of them, and a login each before sessions were kept.
const bmcPowerRecheck = 10 * time.Second

func (t *bmcTarget) powerRecheck(poll time.Duration) time.Duration { return max(poll, bmcPowerRecheck) }

// joined is always true: the server of a BMCInventory runs a node of the
// cluster, so its power is switched only in that node's maintenance mode,
// and not at all while the node cannot be found.
func (t *bmcTarget) joined() bool { return true }
