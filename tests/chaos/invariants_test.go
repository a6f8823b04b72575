package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// quiesce stops the chaos: no fault, the controller and the apiserver up,
// every node Ready again. Then the pools must settle, and once deleted,
// release everything.
func (r *run) quiesce() {
	for _, step := range sortedInts(r.faults) {
		r.removeFault(step)
	}
	r.env.Sim.ClearFaults()
	r.kills.disarm()
	r.notes = append(r.notes, "quiesce: controller "+r.ensureController())
	r.notes = append(r.notes, "quiesce: "+r.switchProject(false))
	r.notes = append(r.notes, "quiesce: "+r.powerOnAll())
	r.notes = append(r.notes, "quiesce: "+r.endMaintenance())
	r.notes = append(r.notes, "quiesce: "+r.quiesceBMCs())
	r.notes = append(r.notes, "quiesce: "+r.quiesceFencing())
	r.notes = append(r.notes, "quiesce: "+r.quiesceOwned())
	r.notes = append(r.notes, "quiesce: "+r.quiesceSeeder())
	for _, name := range r.env.Agent.NodeNames() {
		// A node the chaos stopped or made NotReady works again; one whose
		// server is gone is no longer the agent's.
		_ = r.env.Agent.SetNodeReady(r.env.Ctx, name)
	}
	begin := time.Now()
	// Instances made in project B while the Secret named it refuse the
	// restored Secret once they next need Equinix Metal (a joined one only
	// when it is deleted); the operator's remedy, a Secret of project B, is
	// applied whenever one says so.
	stopRemedy := r.remedyWhileQuiescing()
	defer stopRemedy()
	r.settle()
	r.rollOutQuietly()
	r.settleVIP()
	settled := time.Now()
	r.rolloutFindings, r.rolloutSummary = r.rollouts.finish()
	r.addon.RememberPasswords()
	r.deletePools()
	deleted := time.Now()
	r.waitReleased()
	// The ElasticIPs go while the controller runs, which releases them.
	r.env.DeleteElasticIPs()
	r.phases = fmt.Sprintf("settle %s, pools deleted %s, released %s", settled.Sub(begin).Round(100*time.Millisecond),
		deleted.Sub(settled).Round(100*time.Millisecond), time.Since(deleted).Round(100*time.Millisecond))
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func (r *run) poll(timeout time.Duration, cond func() bool) bool {
	err := wait.PollUntilContextTimeout(r.env.Ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	return err == nil
}

// runPools lists the run's pools.
func (r *run) runPools() ([]equinixv1.InstancePool, error) {
	list, err := r.env.Client.EquinixV1().InstancePools().List(r.env.Ctx, metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=%d", labelSeed, r.plan.Seed)})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// runInstances lists the run's Instances (their names start with the pool's).
func (r *run) runInstances() ([]equinixv1.Instance, error) {
	list, err := r.env.Client.EquinixV1().Instances().List(r.env.Ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []equinixv1.Instance
	for _, i := range list.Items {
		if strings.HasPrefix(i.Name, runPrefix(r.plan.Seed)) {
			out = append(out, i)
		}
	}
	return out, nil
}

// settle waits until every pool not being deleted is ready at its count, or
// a guard (ProvisioningFailed, RemediationBlocked) says why it is not. A pool
// that does neither once the chaos has stopped is stuck.
func (r *run) settle() {
	var unsettled []string
	if r.poll(settleTimeout, func() bool {
		unsettled = r.unsettledPools()
		return len(unsettled) == 0
	}) {
		return
	}
	for _, d := range unsettled {
		r.violation("a pool did not settle within %s after the chaos stopped:\n%s", settleTimeout, d)
	}
}

func (r *run) unsettledPools() []string {
	pools, err := r.runPools()
	if err != nil {
		return []string{"listing pools: " + err.Error()}
	}
	insts, err := r.runInstances()
	if err != nil {
		return []string{"listing instances: " + err.Error()}
	}
	var out []string
	for i := range pools {
		p := &pools[i]
		if p.DeletionTimestamp != nil || settled(p, insts) {
			continue
		}
		out = append(out, describePool(p, insts))
	}
	return out
}

func settled(p *equinixv1.InstancePool, insts []equinixv1.Instance) bool {
	st := p.Status
	if st.ObservedGeneration != p.Generation {
		return false
	}
	if conditions.IsTrue(st.Conditions, equinixv1.PoolProvisioningFailed) || conditions.IsTrue(st.Conditions, equinixv1.PoolRemediationBlocked) {
		return true
	}
	n := 0
	for _, i := range insts {
		if i.Spec.PoolName != p.Name {
			continue
		}
		if i.DeletionTimestamp != nil {
			return false
		}
		n++
	}
	return st.Status == equinixv1.PoolPhaseReady && int(st.Ready) == int(p.Spec.Count) && n == int(p.Spec.Count)
}

func describePool(p *equinixv1.InstancePool, insts []equinixv1.Instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  pool %s: count=%d status=%s ready=%d generation=%d observed=%d finalizers=%v deleting=%v\n",
		p.Name, p.Spec.Count, p.Status.Status, p.Status.Ready, p.Generation, p.Status.ObservedGeneration, p.Finalizers, p.DeletionTimestamp != nil)
	writeConditions(&b, p.Status.Conditions)
	for i := range insts {
		if insts[i].Spec.PoolName == p.Name {
			b.WriteString(describeInstance(&insts[i]))
		}
	}
	return b.String()
}

func describeInstance(i *equinixv1.Instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  instance %s (uid %s): status=%s device=%s state=%s finalizers=%v deleting=%v\n",
		i.Name, i.UID, i.Status.Status, i.Status.InstanceID, i.Status.DeviceState, i.Finalizers, i.DeletionTimestamp != nil)
	writeConditions(&b, i.Status.Conditions)
	return b.String()
}

func writeConditions(b *strings.Builder, conds []metav1.Condition) {
	for _, c := range conds {
		fmt.Fprintf(b, "    %s=%s %s: %s (since %s)\n", c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.RFC3339))
	}
}

// deletePools deletes the run's pools and waits until they and their
// Instances are gone: a finalizer left after that is stuck.
func (r *run) deletePools() {
	pools, err := r.runPools()
	if err != nil {
		r.t.Fatalf("listing pools: %v", err)
	}
	for _, p := range pools {
		err := r.env.Client.EquinixV1().InstancePools().Delete(r.env.Ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			r.t.Fatalf("deleting pool %s: %v", p.Name, err)
		}
	}
	var pl []equinixv1.InstancePool
	var insts []equinixv1.Instance
	if r.poll(releaseTimeout, func() bool {
		var perr, ierr error
		pl, perr = r.runPools()
		insts, ierr = r.runInstances()
		return perr == nil && ierr == nil && len(pl) == 0 && len(insts) == 0
	}) {
		return
	}
	for i := range pl {
		r.violation("stuck finalizer: pool still exists %s after it was deleted:\n%s", releaseTimeout, describePool(&pl[i], insts))
	}
	for i := range insts {
		r.violation("stuck finalizer: instance still exists %s after its pool was deleted:\n%s", releaseTimeout, describeInstance(&insts[i]))
	}
}

// waitReleased waits for the sweep and the last deprovisioning: then only the
// foreign devices and no VLAN of this cluster may be left.
func (r *run) waitReleased() {
	r.poll(sweepTimeout, func() bool {
		return len(r.leftoverDevices()) == 0 && len(r.ourVLANs()) == 0
	})
}

func (r *run) leftoverDevices() []metalv1.Device {
	var out []metalv1.Device
	for _, d := range append(r.env.Sim.Devices(framework.ProjectID), r.projectBDevices()...) {
		if _, ok := r.foreign.devices[d.GetId()]; !ok && d.GetId() != r.vip.firstDevice {
			out = append(out, d)
		}
	}
	return out
}

func (r *run) ourVLANs() []metal.VirtualNetwork {
	var vlans []metal.VirtualNetwork
	for _, client := range []metal.Client{r.metal, r.metalB} {
		list, err := client.ListVLANs(r.env.Ctx, "")
		if err != nil {
			return []metal.VirtualNetwork{{Description: "listing VLANs failed: " + err.Error()}}
		}
		vlans = append(vlans, list...)
	}
	var out []metal.VirtualNetwork
	for _, v := range vlans {
		if slices.Contains(v.Tags, r.clusterTag) {
			out = append(out, v)
		}
	}
	return out
}

// check tests the invariants that hold once everything is released.
func (r *run) check() {
	r.checkDevices()
	r.checkForeign()
	r.checkNetworkObjects()
	r.checkVIP()
	for _, v := range r.ledger.violations() {
		r.violation("%s", v)
	}
	for _, v := range r.rolloutFindings {
		r.violation("%s", v)
	}
	for _, v := range r.creates.refusalViolations(runPrefix(r.plan.Seed)) {
		r.violation("refused creates not paced: %s", v)
	}
	r.checkSecrets()
	r.checkBMCs()
	r.checkFencing()
	r.checkOwned()
	r.checkSeeder()
	r.checkHardwareEvents()
	r.checkControllerLog()
	r.reportOrphans()
}

func (r *run) checkDevices() {
	for _, d := range r.leftoverDevices() {
		r.violation("device %s (%s, %s, tags %v) is left after every pool was deleted and the orphan sweep ran",
			d.GetId(), d.GetHostname(), d.GetState(), d.Tags)
	}
}
