package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// vipWorld is the cluster VIP's side of a run: the VIP an Elastic IP of the
// project, Harvester's Service for it, a first node a person installed, and
// a person's own address assigned to that node's device.
type vipWorld struct {
	first, firstDevice string
	ledger             *framework.AddressLedger
	// foreignBlock and foreignAssignment: the person's address, which must
	// stay on the first node's device.
	foreignBlock, foreignAssignment string
}

const vipMetro = "sg"

// setUpVIP runs before the controller starts, so that it finds the VIP in
// the project at once.
func (r *run) setUpVIP() {
	env := r.env
	env.ReserveVIP(vipMetro)
	env.IngressExpose()
	v := &r.vip
	v.first = fmt.Sprintf("chaos%d-first", r.plan.Seed)
	v.firstDevice = env.FirstNode(v.first, vipMetro)
	v.ledger = env.WatchAddress(framework.VIP)
	block, err := r.metal.ReserveIPs(env.Ctx, metal.ReserveIPsRequest{Quantity: 1, Metro: vipMetro, Tags: []string{"operator"}})
	if err != nil {
		r.t.Fatalf("reserving the operator's address: %v", err)
	}
	a, err := r.metal.AssignIP(env.Ctx, v.firstDevice, block.Address+"/32")
	if err != nil {
		r.t.Fatalf("assigning the operator's address: %v", err)
	}
	v.foreignBlock, v.foreignAssignment = block.ID, a.ID
}

// vipNodes are the nodes kube-vip may name: the first node and the
// servers the join agent runs.
func (r *run) vipNodes() []string {
	return append([]string{r.vip.first}, r.env.Agent.NodeNames()...)
}

// moveVIP plays kube-vip taking the VIP on another node.
func (r *run) moveVIP(pick int) string {
	nodes := r.vipNodes()
	name := nodes[pick%len(nodes)]
	if err := r.env.SetVIPHost(name); err != nil {
		return "refused: " + err.Error()
	}
	return name
}

// vipTarget is where the VIP must end: the node kube-vip names, if its
// server can take the address (active, in the VIP's metro, layer-3
// addresses); otherwise kube-vip is made to move to the first node, as it
// would off a node that is gone.
func (r *run) vipTarget() (node, device string) {
	svc, err := r.env.Kube.CoreV1().Services(v1.VIPServiceNamespace).Get(r.env.Ctx, v1.VIPServiceName, metav1.GetOptions{})
	if err == nil {
		node = svc.Annotations[v1.AnnotationVIPHost]
	}
	if node != "" && node != r.vip.first {
		inst, err := r.env.Client.EquinixV1().Instances().Get(r.env.Ctx, node, metav1.GetOptions{})
		if err == nil && inst.DeletionTimestamp == nil && slices.Contains(r.env.Agent.NodeNames(), node) && r.canTakeVIP(inst.Status.InstanceID) {
			return node, inst.Status.InstanceID
		}
	}
	if node != r.vip.first {
		r.notes = append(r.notes, fmt.Sprintf("quiesce: kube-vip moves from %q to the first node", node))
	}
	// A fresh annotation write also brings the ElasticIP back at once,
	// whatever backoff its failures built up.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,"chaos.harvesterhci.io/quiesce":%q}}}`,
		v1.AnnotationVIPHost, r.vip.first, time.Now().Format(time.RFC3339Nano))
	if _, err := r.env.Kube.CoreV1().Services(v1.VIPServiceNamespace).Patch(r.env.Ctx, v1.VIPServiceName,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		r.violation("naming the first node on the VIP's Service: %v", err)
	}
	return r.vip.first, r.vip.firstDevice
}

func (r *run) canTakeVIP(deviceID string) bool {
	if deviceID == "" {
		return false
	}
	d, ok := r.env.Sim.Device(deviceID)
	if !ok || string(d.GetState()) != string(metal.DeviceStateActive) || !strings.EqualFold(d.Metro.GetCode(), vipMetro) {
		return false
	}
	net, err := r.env.Sim.DeviceNetwork(deviceID)
	return err == nil && !strings.HasPrefix(net.Type, "layer2")
}

// settleVIP: once the chaos stopped, the VIP ends on the device of the node
// kube-vip names, and the ElasticIP says so.
func (r *run) settleVIP() {
	node, dev := r.vipTarget()
	var last string
	if r.poll(settleTimeout, func() bool {
		e := r.env.ElasticIP(v1.VIPElasticIPName)
		if e == nil {
			last = "no ElasticIP " + v1.VIPElasticIPName
			return false
		}
		last = fmt.Sprintf("%s on %s (node %s), move %+v, holders %v", e.Status.Status, e.Status.DeviceID, e.Status.NodeName,
			e.Status.Move, r.vip.ledger.Holders())
		return e.Status.Status == v1.ElasticIPPhaseAssigned && e.Status.DeviceID == dev && e.Status.NodeName == node &&
			e.Status.Move == nil && slices.Equal(r.vip.ledger.Holders(), []string{dev})
	}) {
		return
	}
	r.violation("the VIP did not settle on device %s of node %s within %s: %s", dev, node, settleTimeout, last)
}

// checkVIP: the VIP was never on two devices, and the person's address is
// where it was.
func (r *run) checkVIP() {
	for _, o := range r.vip.ledger.Overlaps() {
		r.violation("the VIP was on two devices: %s", o)
	}
	res, err := r.metal.GetIPReservation(r.env.Ctx, r.vip.foreignBlock)
	if err != nil {
		r.violation("the operator's reservation %s: %v", r.vip.foreignBlock, err)
		return
	}
	if len(res.Assignments) != 1 || res.Assignments[0].ID != r.vip.foreignAssignment || res.Assignments[0].DeviceID != r.vip.firstDevice {
		r.violation("the operator's address %s was moved: assignments %+v", res.Address, res.Assignments)
	}
	for _, req := range r.env.Sim.RequestsFor(metalsim.OpDeleteIPAddress) {
		if strings.HasSuffix(req.Path, "/"+r.vip.foreignAssignment) || strings.HasSuffix(req.Path, "/"+r.vip.foreignBlock) {
			r.violation("the controller sent %s %s, the operator's address", req.Method, req.Path)
		}
	}
}

// vipHolder is the kill trigger's memory of which devices held the VIP, so
// that it can fire inside the unassign of a move.
type vipHolder struct {
	mu   sync.Mutex
	held map[string]bool
}

// unassigned reports whether n is the VIP leaving a device.
func (h *vipHolder) unassigned(n metalsim.Notification) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = map[string]bool{}
	}
	if n.Type != metalsim.DeviceNetworkChanged {
		return false
	}
	has := slices.ContainsFunc(n.Network.Addresses, func(a metalsim.Address) bool { return a.Address == framework.VIP })
	was := h.held[n.DeviceID]
	h.held[n.DeviceID] = has
	return was && !has
}

// removeElasticIPs strips what a crashed run left: the controller that would
// release ElasticIPs is gone, and their assignments went with the simulator.
func removeElasticIPs(t *testing.T, env *framework.Env) {
	ctx := context.Background()
	eips := env.Client.EquinixV1().ElasticIPs()
	list, err := eips.List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range list.Items {
		e := &list.Items[i]
		strip(t, e.Finalizers, func() error {
			e.Finalizers = nil
			_, err := eips.Update(ctx, e, metav1.UpdateOptions{})
			return err
		})
		_ = eips.Delete(ctx, e.Name, metav1.DeleteOptions{})
	}
}
