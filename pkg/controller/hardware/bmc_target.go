package hardware

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// bmcTarget is a BMCInventory: a node the addon did not provision, whose
// server a BMC manages.
type bmcTarget struct {
	workingCopy[*v1.BMCInventory]
}

func newBMCTarget(client equinixcontrollers.BMCInventoryClient, inv *v1.BMCInventory) *bmcTarget {
	return &bmcTarget{newWorkingCopy("BMCInventory", inv, func(i *v1.BMCInventory) any { return i.Status },
		func(i *v1.BMCInventory) *[]metav1.Condition { return &i.Status.Conditions }, client.UpdateStatus)}
}

func (t *bmcTarget) powerSpec() v1.PowerSpec      { return t.obj.Spec.PowerSpec }
func (t *bmcTarget) hardware() *v1.HardwareStatus { return &t.obj.Status.HardwareStatus }

// joined is always true: the server of a BMCInventory runs a node of the
// cluster, so its power is switched only in that node's maintenance mode,
// and not at all while the node cannot be found.
func (t *bmcTarget) joined() bool { return true }
