package bmcinventory

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/reconcile"
)

// target is a BMCInventory as the hardware steps see it (a
// hardware.Target): a node the addon did not provision, whose server a BMC
// manages.
type target struct {
	hardware.ObjectPass[*v1.BMCInventory, v1.BMCInventoryStatus]
}

// newTarget starts a pass over inv; every status it writes is recorded in
// the handler's written, so that the next pass reads it even before the
// cache does.
func (h *Handler) newTarget(inv *v1.BMCInventory) *target {
	kind := reconcile.Kind[*v1.BMCInventory, v1.BMCInventoryStatus]{
		Name:         "BMCInventory",
		Status:       func(i *v1.BMCInventory) *v1.BMCInventoryStatus { return &i.Status },
		Conditions:   func(i *v1.BMCInventory) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *v1.BMCInventory) (*v1.BMCInventory, error) { return h.inventories.UpdateStatus(i) },
		EnqueueAfter: func(name string, after time.Duration) { h.inventories.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
		Wrote:        func(_ *v1.BMCInventoryStatus, written *v1.BMCInventory) { h.written.Wrote(written) },
	}
	return &target{hardware.ObjectPass[*v1.BMCInventory, v1.BMCInventoryStatus]{Pass: reconcile.NewPass(kind, inv), Kind: "BMCInventory"}}
}

func (t *target) PowerSpec() v1.PowerSpec      { return t.Obj.Spec.PowerSpec }
func (t *target) Hardware() *v1.HardwareStatus { return &t.Obj.Status.HardwareStatus }

// bmcPowerRecheck is the least time between two checks of a power
// action's effect on a BMC, whatever --poll-interval says (a second in a
// development setup). A server takes seconds to switch its power, a BMC
// reports it no sooner, and one check every 10 s is six reads a minute on
// the one session kept meanwhile, which no BMC minds; a check a second was
// 60 of them, and a login each before sessions were kept.
const bmcPowerRecheck = 10 * time.Second

func (t *target) PowerRecheck(poll time.Duration) time.Duration { return max(poll, bmcPowerRecheck) }

// Joined is always true: the server of a BMCInventory runs a node of the
// cluster, so its power is switched only in that node's maintenance mode,
// and not at all while the node cannot be found.
func (t *target) Joined() bool { return true }
