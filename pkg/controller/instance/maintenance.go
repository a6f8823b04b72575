package instance

import (
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/drain"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

const (
	defaultMaintenanceTimeout = 30 * time.Minute
	defaultStartupTimeout     = 45 * time.Minute
)

// maintenance empties a joined node before its server is deleted: it requests
// Harvester maintenance mode (VMs migrate away; Harvester sets
// maintain-status=completed), or, where the cluster's Harvester predates that
// mode (before v1.2.0), cordons the node and evicts its pods itself. It waits
// at most the pool's remediation.maintenanceTimeout, then lets the deletion go
// on. A node that is gone or not Ready has nothing to move and is skipped.
func (r *run) maintenance() (bool, error) {
	name := r.Obj.NodeName()
	if name == "" {
		return true, nil
	}
	node, err := r.h.nodes.Cache().Get(name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading node %s: %w", name, err)
	}
	// The request this chain patched a moment ago may not be cached yet.
	node = r.h.nodeWrites.Latest(node)
	if !common.OwnedNode(node, r.Obj) || !harvester.IsNodeReady(node) || harvester.MaintenanceStatus(node) == harvester.MaintenanceCompleted {
		return true, nil
	}
	st := &r.Obj.Status
	timeout := r.maintenanceTimeout()
	modeAvailable := r.maintenanceModeAvailable()
	if st.MaintenanceRequestedAt == nil {
		if err := r.requestMaintenance(node, modeAvailable); err != nil {
			return false, err
		}
		st.MaintenanceRequestedAt = r.NowTime()
		how := "Harvester maintenance mode (VMs migrate to other nodes)"
		if !modeAvailable {
			how = "a cordon and drain (this Harvester release has no maintenance mode)"
		}
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonMaintenance,
			fmt.Sprintf("requested %s for node %s; its server is deleted when that completes or after %s", how, node.Name, timeout))
		r.Poll()
		return false, r.Persist()
	}
	if r.Now().After(st.MaintenanceRequestedAt.Add(timeout)) {
		r.Eventf(equinixv1.ReasonMaintenanceTimeout,
			"node %s did not finish maintenance within %s; deleting its server anyway", node.Name, timeout)
		return true, nil
	}
	if !modeAvailable {
		done, err := r.drain(node)
		if err != nil || done {
			return done, err
		}
	} else if !harvester.MaintenanceUnderWay(node) {
		// Neither asked for nor running: Harvester takes the request off
		// the node as it starts maintenance, and takes it off when it
		// refuses.
		return false, r.maintenanceWithdrawn(node, modeAvailable, st.MaintenanceRequestedAt.Add(timeout))
	}
	r.Poll()
	return false, nil
}

// maintenanceWithdrawn handles a maintenance request that is no longer on
// the node. Harvester drops one it judges unsafe (its DrainPossible): that
// is reported, and the timeout waited out. A request Harvester would take
// was withdrawn by someone else (Disable Maintenance Mode in the UI while
// the server waits to be removed): the drain is still needed before the
// server goes, so it is asked for again; the timeout still counts from the
// first request.
func (r *run) maintenanceWithdrawn(node *corev1.Node, modeAvailable bool, deadline time.Time) error {
	at := deadline.UTC().Format(time.RFC3339)
	possible, why := harvester.MaintenancePossible(r.listNodes(), node)
	if !possible {
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonMaintenanceRefused,
			fmt.Sprintf("Harvester refused maintenance mode for node %s (%s); the server is deleted at %s", node.Name, why, at))
		r.Poll()
		return nil
	}
	if err := r.requestMaintenance(node, modeAvailable); err != nil {
		return err
	}
	r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonMaintenance,
		fmt.Sprintf("the maintenance request of node %s was withdrawn while its server waits to be removed; requested it again; the server is deleted when maintenance completes or at %s", node.Name, at))
	r.Poll()
	return nil
}

func (r *run) listNodes() []*corev1.Node {
	nodes, err := r.h.nodes.Cache().List(labels.Everything())
	if err != nil {
		return nil
	}
	return nodes
}

func (r *run) maintenanceTimeout() time.Duration {
	pool, err := r.h.pools.Get(r.Obj.Spec.PoolName)
	if err == nil && pool.Spec.Remediation.MaintenanceTimeout != nil {
		return pool.Spec.Remediation.MaintenanceTimeout.Duration
	}
	return defaultMaintenanceTimeout
}

// startupTimeout is the pool's remediation.startupTimeout.
func (r *run) startupTimeout() time.Duration {
	pool, err := r.h.pools.Get(r.Obj.Spec.PoolName)
	if err == nil && pool.Spec.Remediation.StartupTimeout != nil {
		return pool.Spec.Remediation.StartupTimeout.Duration
	}
	return defaultStartupTimeout
}

// maintenanceModeAvailable: the annotation-driven maintenance flow exists since
// Harvester v1.2.0; older releases are cordoned and drained by the addon.
func (r *run) maintenanceModeAvailable() bool {
	v, err := r.h.joinInfo.Version("")
	return err == nil && harvester.HasMaintenanceMode(v)
}

func (r *run) requestMaintenance(node *corev1.Node, modeAvailable bool) error {
	updated, err := r.h.nodes.Patch(node.Name, types.MergePatchType, harvester.MaintenancePatch(modeAvailable, false))
	if err != nil {
		return fmt.Errorf("requesting maintenance of node %s: %w", node.Name, err)
	}
	r.h.nodeWrites.Wrote(updated)
	r.Eventf(equinixv1.ReasonMaintenance, "requested maintenance of node %s before deleting its server", node.Name)
	return nil
}

// drain evicts the pods a drain moves and reports whether none is left. It
// uses the library kubectl drain and Harvester's own drain use, with
// Harvester's choices: DaemonSet and mirror pods stay, pods of no
// controller and pods with emptyDir data go. Each pass evicts what is left
// and returns; an eviction a PodDisruptionBudget refuses now is tried again
// on the next pass.
func (r *run) drain(node *corev1.Node) (bool, error) {
	helper := &drain.Helper{
		Ctx: r.h.ctx, Client: r.h.k8s, Force: true, GracePeriodSeconds: -1,
		IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		Out: io.Discard, ErrOut: io.Discard,
	}
	list, errs := helper.GetPodsForDeletion(node.Name)
	if len(errs) > 0 {
		return false, fmt.Errorf("listing the pods to drain from node %s: %w", node.Name, utilerrors.NewAggregate(errs))
	}
	pods := list.Pods()
	if len(pods) == 0 {
		return true, nil
	}
	// Releases before Harvester v1.2 run Kubernetes versions that may
	// offer only the v1beta1 eviction.
	version, err := drain.CheckEvictionSupport(r.h.k8s)
	if err != nil {
		return false, fmt.Errorf("finding the eviction API: %w", err)
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		err := helper.EvictPod(pod, version)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
			return false, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return false, nil
}
