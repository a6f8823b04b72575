package sweep

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// orphanNodes deletes the Nodes the addon's servers registered as when both
// their Instance and their device are gone, which happens when a person
// removes an Instance's finalizer by hand: the sweep deletes the device, and
// without this the labelled, cordoned Node stayed forever. A Node is the
// addon's only when it is named like the Instance its label names; it goes
// only once not Ready, with no device of that ID or hostname in any project,
// and when every project could be listed.
func (s *Sweeper) orphanNodes(seen *seenDevices) error {
	if seen.incomplete {
		return nil
	}
	req, err := labels.NewRequirement(equinixv1.LabelInstance, selection.Exists, nil)
	if err != nil {
		return err
	}
	nodes, err := s.nodes.Cache().List(labels.NewSelector().Add(*req))
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, node := range nodes {
		if !s.nodeOrphaned(node, seen) {
			continue
		}
		uid := node.UID
		err := s.nodes.Delete(node.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting orphaned node %s: %w", node.Name, err)
		}
		if err == nil {
			common.Eventf(s.recorder, s.involvedObject(node.Labels[equinixv1.LabelPool]), equinixv1.ReasonOrphanNodeDeleted,
				"deleted node %s: the addon installed it, but its Instance and its device %q no longer exist", node.Name, node.Labels[equinixv1.LabelDeviceID])
		}
	}
	return nil
}

func (s *Sweeper) nodeOrphaned(node *corev1.Node, seen *seenDevices) bool {
	name := node.Labels[equinixv1.LabelInstance]
	if node.Name != name || node.DeletionTimestamp != nil || harvester.IsNodeReady(node) {
		return false
	}
	if id := node.Labels[equinixv1.LabelDeviceID]; id != "" && seen.ids[id] || seen.hostnames[name] {
		return false
	}
	if _, err := s.instances.Cache().Get(name); !apierrors.IsNotFound(err) {
		return false
	}
	// The cache can lag behind an Instance created a moment ago: ask the
	// apiserver (a list by name, which the chart grants; nothing else
	// needs a get).
	live, err := s.instances.List(metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	return err == nil && len(live.Items) == 0
}
