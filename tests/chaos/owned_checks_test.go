package chaos

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// ownedSurgeWatch samples the owned pools, their Instances and the claims
// on the run's Inventories while the chaos runs:
//   - a pool that rolls out never holds more claimed servers than count +
//     maxSurge, armed as the Metal rollout watch arms it (once within the
//     bound at the pool's generation, which a scale change renews);
//   - no two Instances not being removed name one server in their status
//     while its Inventory's claim names one of them (one list is one
//     moment, and a correct claim is only taken once the last holder is
//     being removed);
//   - no two Instances not being removed hold one management address.
type ownedSurgeWatch struct {
	r       *run
	w       *ownedWorld
	mu      sync.Mutex
	windows map[types.UID]*rolloutWindow
	found   []string
	checked int
	// mostAddressed is the most Instances seen holding a management
	// address at once.
	mostAddressed int
	stop          chan struct{}
	done          chan struct{}
}

func watchOwnedSurge(r *run, w *ownedWorld) *ownedSurgeWatch {
	s := &ownedSurgeWatch{r: r, w: w, windows: map[types.UID]*rolloutWindow{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *ownedSurgeWatch) finish() []string {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.found
}

func (s *ownedSurgeWatch) violation(format string, args ...any) {
	if len(s.found) < 20 {
		s.found = append(s.found, fmt.Sprintf(format, args...))
	}
}

func (s *ownedSurgeWatch) lists() (pools []equinixv1.InstancePool, insts []equinixv1.Instance, invs []seederv1alpha1.Inventory, ok bool) {
	ctx, prefix := s.r.env.Ctx, ownedPrefix(s.w.seed)
	pl, err := s.r.env.Client.EquinixV1().InstancePools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, nil, false
	}
	il, err := s.r.env.Client.EquinixV1().Instances().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, nil, false
	}
	vl, err := s.r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, nil, false
	}
	for _, p := range pl.Items {
		if strings.HasPrefix(p.Name, prefix) {
			pools = append(pools, p)
		}
	}
	for _, i := range il.Items {
		if strings.HasPrefix(i.Name, prefix) {
			insts = append(insts, i)
		}
	}
	for _, v := range vl.Items {
		if strings.HasPrefix(v.Name, prefix) {
			invs = append(invs, v)
		}
	}
	return pools, insts, invs, true
}

func (s *ownedSurgeWatch) sample() {
	before, insts, invs, ok := s.lists()
	if !ok {
		return
	}
	after, err := s.r.env.Client.EquinixV1().InstancePools().List(s.r.env.Ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	generation := map[types.UID]int64{}
	for _, p := range after.Items {
		generation[p.UID] = p.Generation
	}
	holder := map[string]string{}
	claimed := map[string]int{}
	for _, inv := range invs {
		if by := inv.Labels[equinixv1.LabelClaimedBy]; by != "" {
			holder[inv.Name] = by
			claimed[by]++
		}
	}
	byPool := map[string][]*equinixv1.Instance{}
	named := map[string][]string{}
	addressed := map[string][]string{}
	for i := range insts {
		inst := &insts[i]
		byPool[inst.Spec.PoolName] = append(byPool[inst.Spec.PoolName], inst)
		if inst.DeletionTimestamp == nil && inst.Status.Server != "" {
			named[inst.Status.Server] = append(named[inst.Status.Server], inst.Name)
		}
		if inst.DeletionTimestamp == nil && inst.Status.ManagementAddress != "" {
			addressed[inst.Status.ManagementAddress] = append(addressed[inst.Status.ManagementAddress], inst.Name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for server, names := range named {
		if len(names) > 1 && (holder[server] == names[0] || holder[server] == names[1]) {
			s.violation("(1, one claim per server): server %s is the server of Instances %v at once, its claim naming %s", server, names, holder[server])
		}
	}
	s.mostAddressed = max(s.mostAddressed, len(addressed))
	for addr, names := range addressed {
		if len(names) > 1 {
			s.violation("(9, one address per server): Instances %v hold management address %s at once", names, addr)
		}
	}
	for i := range before {
		p := &before[i]
		if p.DeletionTimestamp != nil || generation[p.UID] != p.Generation {
			continue
		}
		win := s.windows[p.UID]
		if win == nil || win.generation != p.Generation {
			win = &rolloutWindow{generation: p.Generation}
			s.windows[p.UID] = win
		}
		mine := byPool[p.Name]
		if p.Status.ObservedGeneration != p.Generation || p.Spec.Count == 0 || !rollingOut(p, mine) {
			win.surgeArmed = false
			continue
		}
		held := 0
		for _, inst := range mine {
			held += claimed[inst.Name]
		}
		count := int(p.Spec.Count)
		surge, _ := rolloutBounds(p.Spec.Rollout, count)
		if win.surgeArmed {
			s.checked++
			if held > count+surge {
				s.violation("(4, count + maxSurge): pool %s (generation %d) rolls out holding %d servers, more than count %d + maxSurge %d: %s",
					p.Name, p.Generation, held, count, surge, describeServers(mine))
			}
		}
		win.surgeArmed = win.surgeArmed || held <= count+surge
	}
}

// quiesceOwned ends the BMC faults and deletes the owned pools while the
// controller runs, and waits for their servers to be released.
func (r *run) quiesceOwned() string {
	w := r.owned
	for _, s := range w.servers {
		s.bmc.clearFaults()
	}
	deleted := 0
	for _, name := range w.plan.Pools {
		if err := r.env.Client.EquinixV1().InstancePools().Delete(r.env.Ctx, name, metav1.DeleteOptions{}); err == nil {
			deleted++
		}
	}
	released := r.poll(releaseTimeout, func() bool {
		pools, insts, _, ok := w.surge.lists()
		return ok && len(pools) == 0 && len(insts) == 0
	})
	w.surgeFindings = w.surge.finish()
	if !released {
		_, insts, _, _ := w.surge.lists()
		r.violation("owned pools' Instances left %s after the pools were deleted: %s", releaseTimeout, describeServers(ptrs(insts)))
	}
	return fmt.Sprintf("owned pools deleted (%d still there), released: %t", deleted, released)
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// checkOwned judges the owned world once its pools are gone.
func (r *run) checkOwned() {
	w := r.owned
	for _, v := range w.claims.doubleClaims() {
		r.violation("owned (1, one claim per server): %s", v)
	}
	for _, v := range w.surgeFindings {
		r.violation("owned %s", v)
	}
	setAside, _ := w.claims.quarantineClaims()
	for _, v := range setAside {
		r.violation("owned (8, a quarantined server is never claimed): %s", v)
	}
	w.checkCommands(r)
	w.checkServed(r)
	w.checkReleased(r)
	w.checkSessions(r)
	w.checkMedia(r)
	w.checkAddresses(r)
}

// checkAddresses (9): once the pools are gone, every management address
// their servers took is back in the AddressPool, whose reserved address
// stays recorded as Seeder records it.
func (w *ownedWorld) checkAddresses(r *run) {
	p, err := r.env.Client.MetalV1alpha1().AddressPools(seederv1alpha1.InventoryNamespace).Get(r.env.Ctx, w.addresses, metav1.GetOptions{})
	if err != nil {
		r.violation("owned (9): reading AddressPool %s: %v", w.addresses, err)
		return
	}
	for addr, ref := range p.Status.AddressAllocation {
		if ref.Kind != seederv1alpha1.AllocationKindReserved {
			r.violation("owned (9): address %s is still held by %s %s/%s after the pools were deleted", addr, ref.Kind, ref.Namespace, ref.Name)
		}
	}
}

// checkSessions: never more than one session open at once on a BMC, as
// the BMC (Redfish) or the relay in front of it (IPMI) saw them.
func (w *ownedWorld) checkSessions(r *run) {
	for _, s := range w.servers {
		if spans := s.bmc.sessions(); bmcsim.MostAtOnce(spans) > 1 {
			r.violation("owned: the %s BMC of %s had %d sessions open at once (sessions %v)",
				s.bmc.protocol(), s.spec.Name, bmcsim.MostAtOnce(spans), spans)
		}
	}
}

// checkCommands (2): no server was powered or network-booted outside a
// claim of it, and a foreign server never was, nor lost its Node.
func (w *ownedWorld) checkCommands(r *run) {
	for _, s := range w.servers {
		var at []string
		for _, x := range s.bmc.powerCommands() {
			if s.foreign || !w.claims.claimedAround(s.spec.Name, "", x.at, x.at) {
				at = append(at, fmt.Sprintf("%s at %s", x.what, x.at.Format("15:04:05.000")))
			}
		}
		for _, x := range s.bmc.networkBoots() {
			if s.foreign || !w.claims.claimedAround(s.spec.Name, "", x, x) {
				at = append(at, fmt.Sprintf("network boot at %s", x.Format("15:04:05.000")))
			}
		}
		if s.foreign {
			at = append(at, s.bmc.changes()...)
			if _, err := r.env.Kube.CoreV1().Nodes().Get(r.env.Ctx, s.spec.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				r.violation("owned (2): the Node of the foreign server %s was deleted", s.spec.Name)
			}
		}
		if len(at) > 0 {
			r.violation("owned (2, no command outside a claim): %s server %s (foreign %t) got commands while no claim of it was open: %v; its claims: %s",
				s.bmc.protocol(), s.spec.Name, s.foreign, at, describeWindows(w.claims.windows(s.spec.Name)))
		}
	}
}

func describeWindows(ws []claimWindow) string {
	var out []string
	for _, c := range ws {
		to := "open"
		if !c.to.IsZero() {
			to = c.to.Format("15:04:05.000")
		}
		out = append(out, fmt.Sprintf("%s %s-%s", c.uid, c.from.Format("15:04:05.000"), to))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// checkServed (3): every configuration and boot image served went to a
// server's MAC while a claim of it was open; the prober's stolen, stray
// and guessed requests got none.
func (w *ownedWorld) checkServed(r *run) {
	for _, a := range w.boots.all() {
		what := map[string]string{"config": "a join configuration", "media": "a boot image"}[a.kind]
		if what == "" || !served(a.status) {
			continue
		}
		s := w.serverOfMAC(a.mac)
		switch {
		case s == nil:
			r.violation("owned (3): %s was served to MAC %s, in no Inventory (%s)", what, a.mac, a.who)
		case s.foreign:
			r.violation("owned (3): %s was served to the foreign server %s (%s) at %s",
				what, s.spec.Name, a.who, a.end.Format("15:04:05.000"))
		case !w.claims.claimedAround(s.spec.Name, "", a.start, a.end):
			r.violation("owned (3): %s was served to server %s (%s) at %s while no claim of it was open; its claims: %s",
				what, s.spec.Name, a.who, a.end.Format("15:04:05.000"), describeWindows(w.claims.windows(s.spec.Name)))
		}
	}
	found, _, _ := w.prober.findings()
	for _, v := range found {
		r.violation("owned (3): %s", v)
	}
}

// checkReleased (5): every server a pool claimed ends free and off, with no
// Node of its pool left.
func (w *ownedWorld) checkReleased(r *run) {
	invs := r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	for name := range w.claims.everClaimed() {
		s := w.server(name)
		inv, err := invs.Get(r.env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			r.violation("owned (5): reading Inventory %s: %v", name, err)
			continue
		}
		if by, uid := inv.Labels[equinixv1.LabelClaimedBy], inv.Annotations[equinixv1.AnnotationClaimUID]; by != "" || uid != "" {
			r.violation("owned (5): server %s is still claimed after its pools were deleted (claimed-by %q, claim-uid %q)", name, by, uid)
		}
		if s == nil {
			continue
		}
		switch on, err := s.bmc.poweredOn(); {
		case err != nil:
			r.violation("owned (5): reading the power of %s server %s: %v", s.bmc.protocol(), name, err)
		case on:
			r.violation("owned (5): %s server %s is on after its pools were deleted", s.bmc.protocol(), name)
		}
	}
	nodes, err := r.env.Kube.CoreV1().Nodes().List(r.env.Ctx, metav1.ListOptions{})
	if err != nil {
		r.violation("owned (5): listing nodes: %v", err)
		return
	}
	prefix := ownedPrefix(w.seed)
	for _, n := range nodes.Items {
		s := w.server(n.Name)
		if strings.HasPrefix(n.Labels[equinixv1.LabelInstance], prefix) || s != nil && !s.foreign {
			r.violation("owned (5): node %s (instance %q) is left after its pool was deleted", n.Name, n.Labels[equinixv1.LabelInstance])
		}
	}
}

// served says whether a status is a read that got content: a BMC reads
// an image in ranges (206).
func served(status int) bool { return status == http.StatusOK || status == http.StatusPartialContent }

// summary counts what the owned world did.
func (w *ownedWorld) summary() string {
	resets, boots, ipmiResets, ipmiBoots, sessions := 0, 0, 0, 0, 0
	var ipmi []int
	for i, s := range w.servers {
		n, b := len(s.bmc.powerCommands()), len(s.bmc.networkBoots())
		resets, boots = resets+n, boots+b
		if _, ok := s.bmc.(ipmiBMC); ok {
			ipmi = append(ipmi, i)
			ipmiResets, ipmiBoots = ipmiResets+n, ipmiBoots+b
			sessions += len(s.bmc.sessions())
		}
	}
	counts := map[string]int{}
	for _, a := range w.boots.all() {
		switch a.status {
		case http.StatusOK:
			counts[a.who+" "+a.kind+" served"]++
		case http.StatusNotFound:
			counts["refused"]++
		}
	}
	_, tries, stolen := w.prober.findings()
	w.surge.mu.Lock()
	surgeChecked, addressed := w.surge.checked, w.surge.mostAddressed
	w.surge.mu.Unlock()
	joined := 0
	for _, res := range w.fleet.Results() {
		if res.OK {
			joined++
		}
	}
	w.mu.Lock()
	made, deleted := len(w.made), len(w.deleted)
	w.mu.Unlock()
	_, quarantined := w.claims.quarantineClaims()
	return fmt.Sprintf("owned: %d pool(s) made, %d deleted during the chaos; %d claims, %d reset commands, %d boots into the installer (IPMI servers %v: %d chassis controls, %d network boots, %d sessions), %d installs joined, %d servers quarantined; configs served %d to servers, %d to the prober; scripts served %d/%d; %d refused (404); %d probes, %d URLs stolen; surge bound checked on %d samples; at most %d static addresses held at once",
		made, deleted, w.claims.claimsTaken(), resets, boots, ipmi, ipmiResets, ipmiBoots, sessions, joined, quarantined, counts["fleet config served"], counts["prober config served"],
		counts["fleet script served"], counts["prober script served"], counts["refused"], tries, stolen, surgeChecked, addressed) + "; " + w.mediaSummary()
}
