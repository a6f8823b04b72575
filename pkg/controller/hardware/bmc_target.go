package hardware

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// bmcTarget is a BMCInventory: a node the addon did not provision, whose
// server a BMC manages.
type bmcTarget struct {
	client    equinixcontrollers.BMCInventoryClient
	inv       *v1.BMCInventory
	persisted v1.BMCInventoryStatus
}

func newBMCTarget(client equinixcontrollers.BMCInventoryClient, inv *v1.BMCInventory) *bmcTarget {
	return &bmcTarget{client: client, inv: inv.DeepCopy(), persisted: *inv.Status.DeepCopy()}
}

func (t *bmcTarget) object() runtime.Object { return t.inv }
func (t *bmcTarget) name() string           { return t.inv.Name }
func (t *bmcTarget) reference() corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: v1.SchemeGroupVersion.String(), Kind: "BMCInventory", Name: t.inv.Name, UID: t.inv.UID}
}
func (t *bmcTarget) powerSpec() v1.PowerSpec      { return t.inv.Spec.PowerSpec }
func (t *bmcTarget) hardware() *v1.HardwareStatus { return &t.inv.Status.HardwareStatus }
func (t *bmcTarget) generation() int64            { return t.inv.Generation }

// joined is always true: the server of a BMCInventory runs a node of the
// cluster, so its power is switched only in that node's maintenance mode,
// and not at all while the node cannot be found.
func (t *bmcTarget) joined() bool   { return true }
func (t *bmcTarget) deleting() bool { return t.inv.DeletionTimestamp != nil }
func (t *bmcTarget) setCondition(s *common.Status, condType string, status metav1.ConditionStatus, reason, message string) {
	s.SetCondition(t.inv, &t.inv.Status.Conditions, t.inv.Generation, condType, status, reason, message)
}

func (t *bmcTarget) changed() bool {
	return !equality.Semantic.DeepEqual(t.persisted, t.inv.Status)
}

func (t *bmcTarget) persist() error {
	if !t.changed() {
		return nil
	}
	updated, err := t.client.UpdateStatus(t.inv)
	if err != nil {
		return fmt.Errorf("updating status of BMCInventory %s: %w", t.inv.Name, err)
	}
	t.inv = updated.DeepCopy()
	t.persisted = *updated.Status.DeepCopy()
	return nil
}
