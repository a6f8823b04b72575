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

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// vipWorld is the Elastic IP side of a run: the VIP an Elastic IP of the
// project, Harvester's Service for it, a first node a person installed, a
// person's own address assigned to that node's device, and an
// ElasticIPPool whose two addresses guest LoadBalancer Services hold.
type vipWorld struct {
	first, firstDevice string
	ledger             *framework.AddressLedger
	// foreignBlock and foreignAssignment: the person's address, which must
	// stay on the first node's device.
	foreignBlock, foreignAssignment string
	// pool is the ElasticIPPool; its block, once known, and the Services
	// given its addresses.
	pool   string
	block  string
	guests []guestService
}

// guestService is a LoadBalancer Service with an address of the pool.
type guestService struct {
	name, address string
	ledger        *framework.AddressLedger
}

// guestNamespace holds the guest Services.
const guestNamespace = "default"

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
	v.pool = fmt.Sprintf("chaos%d-lb", r.plan.Seed)
	env.CreateElasticIPPool(v.pool, vipMetro, 2)
}

// guests gives the pool's addresses to two Services, as harvester-load-
// balancer would, once the pool's block is known; false until then.
func (r *run) ensureGuests() bool {
	v := &r.vip
	if len(v.guests) > 0 {
		return true
	}
	pool := r.env.ElasticIPPool(v.pool)
	if pool == nil || pool.Status.CIDR == "" {
		return false
	}
	v.block = pool.Status.ReservationID
	for i, name := range []string{"web", "api"} {
		g := guestService{name: fmt.Sprintf("chaos%d-%s", r.plan.Seed, name), address: framework.PoolAddress(pool, i)}
		g.ledger = r.env.WatchAddress(g.address)
		r.kills.vip.watch(g.address)
		r.env.LoadBalancerService(guestNamespace, g.name, g.address)
		v.guests = append(v.guests, g)
	}
	return true
}

// vipNodes are the nodes kube-vip may name: the first node and the
// servers the join agent runs.
func (r *run) vipNodes() []string {
	return append([]string{r.vip.first}, r.env.Agent.NodeNames()...)
}

// moveVIP plays kube-vip taking the VIP on another node, and the guest
// Services' addresses on the nodes after it.
func (r *run) moveVIP(pick int) string {
	nodes := r.vipNodes()
	name := nodes[pick%len(nodes)]
	if err := r.env.SetVIPHost(name); err != nil {
		return "refused: " + err.Error()
	}
	out := name
	if r.ensureGuests() {
		for i, g := range r.vip.guests {
			node := nodes[(pick+i+1)%len(nodes)]
			if err := r.env.SetServiceVIPHost(guestNamespace, g.name, node); err != nil {
				return out + "; " + g.name + " refused: " + err.Error()
			}
			out += fmt.Sprintf("; %s on %s", g.name, node)
		}
	}
	return out
}

// vipTarget is where the VIP must end: the node kube-vip names, if its
// server can take the address (active, in the VIP's metro, layer-3
// addresses); otherwise kube-vip is made to move to the first node, as it
// would off a node that is gone.
func (r *run) vipTarget() (node, device string) {
	return r.serviceTarget(equinixv1.VIPServiceNamespace, equinixv1.VIPServiceName)
}

// serviceTarget is vipTarget for any Service kube-vip serves.
func (r *run) serviceTarget(namespace, service string) (node, device string) {
	svc, err := r.env.Kube.CoreV1().Services(namespace).Get(r.env.Ctx, service, metav1.GetOptions{})
	if err == nil {
		node = svc.Annotations[equinixv1.AnnotationVIPHost]
	}
	if node != "" && node != r.vip.first {
		inst, err := r.env.Client.EquinixV1().Instances().Get(r.env.Ctx, node, metav1.GetOptions{})
		if err == nil && inst.DeletionTimestamp == nil && slices.Contains(r.env.Agent.NodeNames(), node) && r.canTakeVIP(inst.Status.InstanceID) {
			return node, inst.Status.InstanceID
		}
	}
	if node != r.vip.first {
		r.notes = append(r.notes, fmt.Sprintf("quiesce: kube-vip moves %s/%s from %q to the first node", namespace, service, node))
	}
	// A fresh annotation write also brings the ElasticIP back at once,
	// whatever backoff its failures built up.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,"chaos.harvesterhci.io/quiesce":%q}}}`,
		equinixv1.AnnotationVIPHost, r.vip.first, time.Now().Format(time.RFC3339Nano))
	if _, err := r.env.Kube.CoreV1().Services(namespace).Patch(r.env.Ctx, service,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		r.violation("naming the first node on Service %s/%s: %v", namespace, service, err)
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

// settleVIP: once the chaos stopped, the VIP, and each guest Service's
// address of the pool, ends on the device of the node kube-vip names, and
// its ElasticIP says so.
func (r *run) settleVIP() {
	node, dev := r.vipTarget()
	r.settleAddress(equinixv1.VIPElasticIPName, "the VIP", node, dev, r.vip.ledger)
	if !r.poll(settleTimeout, r.ensureGuests) {
		r.violation("ElasticIPPool %s has no block after %s", r.vip.pool, settleTimeout)
		return
	}
	pool := r.env.ElasticIPPool(r.vip.pool)
	for _, g := range r.vip.guests {
		node, dev := r.serviceTarget(guestNamespace, g.name)
		r.settleAddress(pool.Name+"-"+strings.ReplaceAll(g.address, ".", "-"), "Service "+g.name+"'s address", node, dev, g.ledger)
	}
}

func (r *run) settleAddress(eip, what, node, dev string, ledger *framework.AddressLedger) {
	var last string
	if r.poll(settleTimeout, func() bool {
		e := r.env.ElasticIP(eip)
		if e == nil {
			last = "no ElasticIP " + eip
			return false
		}
		last = fmt.Sprintf("%s on %s (node %s), move %+v, holders %v", e.Status.Status, e.Status.DeviceID, e.Status.NodeName,
			e.Status.Move, ledger.Holders())
		return e.Status.Status == equinixv1.ElasticIPPhaseAssigned && e.Status.DeviceID == dev && e.Status.NodeName == node &&
			e.Status.Move == nil && slices.Equal(ledger.Holders(), []string{dev})
	}) {
		return
	}
	r.violation("%s did not settle on device %s of node %s within %s: %s", what, dev, node, settleTimeout, last)
}

// checkVIP: the VIP was never on two devices, and the person's address is
// where it was.
func (r *run) checkVIP() {
	for _, o := range r.vip.ledger.Overlaps() {
		r.violation("the VIP was on two devices: %s", o)
	}
	for _, g := range r.vip.guests {
		for _, o := range g.ledger.Overlaps() {
			r.violation("Service %s's address was on two devices: %s", g.name, o)
		}
		if h := g.ledger.Holders(); len(h) > 0 {
			r.violation("Service %s's address %s is still on %v after its pool went", g.name, g.address, h)
		}
	}
	if r.vip.block != "" {
		if _, err := r.metal.GetIPReservation(r.env.Ctx, r.vip.block); !metal.IsNotFound(err) {
			r.violation("the pool's block %s was not released after the pool went: %v", r.vip.block, err)
		}
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

// vipHolder is the kill trigger's memory of which devices held the VIP or
// a guest Service's address, so that it can fire inside the unassign of a
// move.
type vipHolder struct {
	mu        sync.Mutex
	addresses []string
	held      map[string]bool
}

// watch adds an address whose moves the trigger fires in.
func (h *vipHolder) watch(address string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addresses = append(h.addresses, address)
}

// unassigned reports whether n is the VIP or a watched address leaving a
// device.
func (h *vipHolder) unassigned(n metalsim.Notification) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = map[string]bool{}
	}
	if n.Type != metalsim.DeviceNetworkChanged {
		return false
	}
	left := false
	for _, addr := range append([]string{framework.VIP}, h.addresses...) {
		key := n.DeviceID + " " + addr
		has := slices.ContainsFunc(n.Network.Addresses, func(a metalsim.Address) bool { return a.Address == addr })
		left = left || (h.held[key] && !has)
		h.held[key] = has
	}
	return left
}

// removeElasticIPs strips what a crashed run left: the controller that would
// release ElasticIPs and their pools is gone, and their assignments and
// blocks went with the simulator.
func removeElasticIPs(t *testing.T, env *framework.Env) {
	ctx := context.Background()
	pools := env.Client.EquinixV1().ElasticIPPools()
	if list, err := pools.List(ctx, metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			p := &list.Items[i]
			strip(t, p.Finalizers, func() error {
				p.Finalizers = nil
				_, err := pools.Update(ctx, p, metav1.UpdateOptions{})
				return err
			})
			_ = pools.Delete(ctx, p.Name, metav1.DeleteOptions{})
		}
	}
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
