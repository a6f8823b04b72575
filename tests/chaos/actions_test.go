package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// do runs one step and says what came of it. Refusals the chaos causes (a
// pool still being deleted, a node already gone) are outcomes, not failures;
// a pool the apiserver finds invalid is a bug of the planner.
func (r *run) do(i int, s step) string {
	if failureKinds[s.Kind] {
		r.marks.failed()
	}
	switch s.Kind {
	case actCreatePool:
		return r.createPool(s.Pool)
	case actScalePool:
		return r.updatePool(s.Pool.Name, func(p *equinixv1.InstancePool) { p.Spec.Count = int32(s.Pool.Count) })
	case actEditVLANs:
		return r.updatePool(s.Pool.Name, func(p *equinixv1.InstancePool) { applyTemplate(&p.Spec, s.Pool) })
	case actRetype, actRollout:
		return r.updatePool(s.Pool.Name, func(p *equinixv1.InstancePool) { applyTemplate(&p.Spec, s.Pool) })
	case actDeletePool:
		err := r.env.Client.EquinixV1().InstancePools().Delete(r.env.Ctx, s.Pool.Name, metav1.DeleteOptions{})
		return errOutcome(err)
	case actKill:
		r.noticeTriggeredKill()
		r.running = false
		killed := r.addon.Kill()
		r.hardware.Kill()
		if killed {
			r.stats.kills++
			r.marks.killed()
		}
		return fmt.Sprintf("sigkilled=%v", killed)
	case actKillOn:
		r.kills.arm(s.Trigger, s.Down)
		return ""
	case actStart:
		return r.ensureController()
	case actFault:
		r.faults[i] = r.env.Sim.InjectFault(s.Fault.fault())
		return ""
	case actUnfault:
		return fmt.Sprintf("fired %d times", r.removeFault(s.FaultOf))
	case actAPIServer:
		return r.restartAPIServer(s.Graceful)
	case actDeleteDevice:
		return r.deleteDevice(s.Pick)
	case actNotReady, actReady:
		return r.nodeReadiness(s)
	case actServerDown:
		return r.serverDown(s.Pick)
	case actDeleteNode:
		return r.deleteNode(s.Pick)
	case actMoveVIP:
		return r.moveVIP(s.Pick)
	case actSwitchProject:
		return r.switchProject(true)
	case actRestoreProject:
		return r.switchProject(false)
	case actPower, actReboot:
		return r.powerAction(s)
	case actMaintain, actUnmaintain:
		return r.maintenance(s)
	case actDeviceEvent:
		return r.deviceEvent(s)
	}
	r.t.Fatalf("unknown action %q", s.Kind)
	return ""
}

// fault is the simulator's form of the spec.
func (f faultSpec) fault() metalsim.Fault {
	return metalsim.Fault{
		Kind: f.Kind, Operations: f.Ops, Probability: f.Probability, Status: f.Status,
		Latency: f.Latency, RetryAfter: f.RetryAfter, AfterStore: f.AfterStore,
	}
}

// removeFault ends a fault and returns how often it fired.
func (r *run) removeFault(step int) int {
	id, ok := r.faults[step]
	if !ok {
		return 0
	}
	fired := r.env.Sim.FaultFired(id)
	r.env.Sim.RemoveFault(id)
	delete(r.faults, step)
	r.stats.faultsFired += fired
	return fired
}

func errOutcome(err error) string {
	if err != nil {
		return "refused: " + err.Error()
	}
	return "ok"
}

func (r *run) createPool(spec poolSpec) string {
	_, err := r.env.Client.EquinixV1().InstancePools().Create(r.env.Ctx, r.poolObject(spec), metav1.CreateOptions{})
	if apierrors.IsInvalid(err) {
		r.t.Errorf("the plan made a pool the apiserver refuses: %v", err)
	}
	return errOutcome(err)
}

func (r *run) updatePool(name string, mutate func(*equinixv1.InstancePool)) string {
	pools := r.env.Client.EquinixV1().InstancePools()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pools.Get(r.env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.DeletionTimestamp != nil {
			return fmt.Errorf("pool %s is being deleted", name)
		}
		mutate(p)
		_, err = pools.Update(r.env.Ctx, p, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsInvalid(err) {
		r.t.Errorf("the plan made a pool update the apiserver refuses: %v", err)
	}
	return errOutcome(err)
}

// poolObject is the seed's sample pool (examples/instancepool.yaml) with the plan's choices.
func (r *run) poolObject(spec poolSpec) *equinixv1.InstancePool {
	p := framework.ParsePool(r.t, framework.SeedSample, spec.Name)
	p.Labels = map[string]string{labelSeed: strconv.FormatInt(r.plan.Seed, 10)}
	p.Spec.Count = int32(spec.Count)
	p.Spec.Metro = spec.Metro
	p.Spec.NodeCleanupWaitInterval = nil
	if spec.Remediate {
		p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	}
	p.Spec.Remediation.MaxProvisionAttempts = spec.MaxAttempts
	if spec.ProjectB {
		p.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: projectBSecret}
	}
	applyTemplate(&p.Spec, spec)
	return p
}

// applyTemplate sets the plan, boot mode, network type, VLANs and rollout
// bounds of spec.
func applyTemplate(ps *equinixv1.InstancePoolSpec, spec poolSpec) {
	if spec.Plan != "" {
		ps.Plan = spec.Plan
	}
	ps.BootMode = spec.BootMode
	ps.NetworkingConfiguration = networking(spec.Network, spec.VLANs)
	ps.Rollout = rolloutStrategy(spec)
}

func networking(typ string, vlans []int) equinixv1.NetworkingConfiguration {
	ids := make([]string, 0, len(vlans))
	for _, v := range vlans {
		ids = append(ids, strconv.Itoa(v))
	}
	nc := equinixv1.NetworkingConfiguration{Type: typ}
	switch typ {
	case equinixv1.NetworkTypeHybrid:
		nc.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{{Name: "eth1", VLANIDs: ids}}
	case equinixv1.NetworkTypeHybridBonded, equinixv1.NetworkTypeLayer2Bonded:
		nc.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{{Name: "bond0", VLANIDs: ids}}
	case equinixv1.NetworkTypeLayer2Individual:
		// The management port carries the first VLAN, the management VLAN.
		nc.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{{Name: "eth0", VLANIDs: ids[:1]}, {Name: "eth1", VLANIDs: ids}}
	}
	return nc
}

// restartAPIServer restarts the kube-apiserver. A crash is a SIGKILL first:
// the restart then only starts it again, where a graceful stop waits for the
// open watches to end.
func (r *run) restartAPIServer(graceful bool) string {
	ctx, cancel := context.WithTimeout(r.env.Ctx, 90*time.Second)
	defer cancel()
	begin := time.Now()
	r.stats.apiRestarts++
	r.marks.apiserverDown()
	if !graceful {
		pid := apiserverPID(r.env.Cluster)
		if pid == 0 {
			r.t.Fatalf("no kube-apiserver process among %v", r.env.Cluster.PIDs())
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			r.t.Fatalf("killing the kube-apiserver (pid %d): %v", pid, err)
		}
	}
	if err := r.env.Cluster.RestartAPIServer(ctx); err != nil {
		r.t.Fatalf("the kube-apiserver did not come back: %v", err)
	}
	r.marks.apiserverBack()
	return "took " + time.Since(begin).Round(10*time.Millisecond).String()
}

// apiserverPID is the test cluster's kube-apiserver process, found by name
// among the cluster's processes.
func apiserverPID(c *cluster.Cluster) int {
	for _, pid := range c.PIDs() {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(comm)) == "kube-apiserver" {
			return pid
		}
	}
	return 0
}

// ourDevices are the run's devices of this cluster that still exist and are
// not being deleted, by ID.
func (r *run) ourDevices() []metalv1.Device {
	var out []metalv1.Device
	for _, d := range r.env.Sim.Devices(framework.ProjectID) {
		if slices.Contains(d.Tags, r.clusterTag) && d.GetState() != metalv1.DEVICESTATE_DEPROVISIONING {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].GetId() < out[b].GetId() })
	return out
}

func (r *run) deleteDevice(pick int) string {
	devs := r.ourDevices()
	if len(devs) == 0 {
		return "no device"
	}
	d := devs[pick%len(devs)]
	if err := r.env.Sim.DeleteDeviceOutOfBand(d.GetId()); err != nil {
		return "refused: " + err.Error()
	}
	r.stats.oobDeletes++
	return fmt.Sprintf("deleted %s (%s, %s)", d.GetId(), d.GetHostname(), d.GetState())
}

// pickNode picks one of the nodes the join agent runs.
func (r *run) pickNode(pick int) string {
	names := r.env.Agent.NodeNames()
	if len(names) == 0 {
		return ""
	}
	return names[pick%len(names)]
}

func (r *run) nodeReadiness(s step) string {
	name := r.pickNode(s.Pick)
	if name == "" {
		return "no node"
	}
	var err error
	if s.Kind == actNotReady {
		err = r.env.Agent.SetNodeNotReady(r.env.Ctx, name, time.Now().Add(-s.Ago))
	} else {
		err = r.env.Agent.SetNodeReady(r.env.Ctx, name)
	}
	if err != nil {
		return "refused: " + err.Error()
	}
	r.stats.nodeFlaps++
	return name
}

func (r *run) serverDown(pick int) string {
	name := r.pickNode(pick)
	if name == "" {
		return "no node"
	}
	for _, d := range r.ourDevices() {
		if d.GetHostname() == name {
			if err := r.env.Agent.ServerDown(r.env.Ctx, d.GetId()); err != nil {
				return "refused: " + err.Error()
			}
			r.stats.nodeFlaps++
			return name
		}
	}
	return "no device for node " + name
}

// deleteNode deletes a node as an administrator would. Only the joined nodes
// of a pool that replaces unhealthy servers are deleted: elsewhere the
// Instance stays unhealthy (or, not yet joined, waits for its 45-minute
// startup timeout), by design, and the pool would not settle.
func (r *run) deleteNode(pick int) string {
	name := r.pickNode(pick)
	if name == "" {
		return "no node"
	}
	inst, err := r.env.Client.EquinixV1().Instances().Get(r.env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	if inst.Status.JoinedAt == nil {
		return "skipped: instance " + name + " has not recorded its join yet"
	}
	pool := inst.Spec.PoolName
	p, err := r.env.Client.EquinixV1().InstancePools().Get(r.env.Ctx, pool, metav1.GetOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	if p.Spec.NodeCleanupWaitInterval == nil {
		return "skipped: pool " + pool + " does not replace unhealthy servers"
	}
	if err := r.env.Agent.DeleteNode(r.env.Ctx, name); err != nil {
		return "refused: " + err.Error()
	}
	r.stats.nodeFlaps++
	return name
}
