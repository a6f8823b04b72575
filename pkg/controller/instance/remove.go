package instance

import (
	"errors"
	"fmt"
	"time"

	"github.com/rancher/wrangler/v3/pkg/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// RemoveInstance is the release: a joined node is drained (maintenance
// mode), the provider stops the server for good (a device deleted and
// gone, a server powered off), the Node and the console Secret are
// deleted, and the provider takes back what the Instance held (VLANs no
// server uses, the claim). Until every step is confirmed the finalizer
// stays, so a paid server is never forgotten; a 401/403 in particular never
// lets it go.
func (h *Handler) RemoveInstance(_ string, inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	r := h.newRun(h.latest(inst))
	steps := h.provider.Steps(r.Pass)
	done, err := r.release(steps)
	updated, perr := r.Finish(errors.Join(err, steps.Tend()))
	if perr != nil {
		return updated, perr
	}
	if !done {
		// ErrSkip keeps the finalizer without reporting an error; Finish has
		// scheduled the next look.
		return updated, generic.ErrSkip
	}
	if inst.DeletionTimestamp != nil {
		metrics.DeleteDuration.Observe(time.Since(inst.DeletionTimestamp.Time).Seconds())
	}
	return updated, nil
}

func (r *run) release(steps provision.Steps) (bool, error) {
	if r.Obj.Status.Status != equinixv1.PhaseDeleting {
		r.SetPhase(equinixv1.PhaseDeleting)
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonDeleting, steps.Releasing())
	}
	if done, err := r.maintenance(); err != nil || !done {
		return false, err
	}
	if done, err := steps.Stop(); err != nil || !done {
		return false, err
	}
	if err := r.deleteNode(); err != nil {
		return false, err
	}
	if err := r.deletePasswordSecret(); err != nil {
		return false, err
	}
	return true, steps.Free()
}

// deleteNode removes the Node only if it is this Instance's (name and label).
func (r *run) deleteNode() error {
	name := r.Obj.NodeName()
	if name == "" {
		return nil
	}
	node, err := r.h.nodes.Cache().Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	if !common.OwnedNode(node, r.Obj) {
		return nil
	}
	err = r.h.nodes.Delete(node.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &node.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", node.Name, err)
	}
	if err == nil {
		r.Eventf(equinixv1.ReasonNodeDeleted, "deleted node %s after its device was gone", node.Name)
	}
	return nil
}

// deletePasswordSecret deletes the console Secret if it is this Instance's
// (its owner reference), and only that version of it (UID precondition).
func (r *run) deletePasswordSecret() error {
	name, ns := r.Obj.Status.PasswordSecret, r.h.settings.Namespace
	if name == "" {
		name = r.Obj.Name + "-console"
	}
	sec, err := r.h.secrets.Cache().Get(ns, name)
	if apierrors.IsNotFound(err) {
		// Never made, gone, or not the addon's (the cache holds only
		// labelled Secrets); the garbage collector deletes an owned one
		// the cache has not seen yet.
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	if !ownedBy(sec.OwnerReferences, r.Obj) {
		return nil
	}
	err = r.h.secrets.Delete(ns, name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sec.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting Secret %s/%s: %w", ns, name, err)
	}
	return nil
}
