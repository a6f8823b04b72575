package chaos

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	metalv1 "github.com/equinix/equinix-sdk-go/services/metalv1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// checkForeign: what the addon does not own still exists, and the addon sent
// no write about it.
func (r *run) checkForeign() {
	for id, what := range r.foreign.devices {
		d, ok := r.env.Sim.Device(id)
		if !ok {
			r.violation("the %s %s was deleted", what, id)
			continue
		}
		if d.GetState() != metalv1.DEVICESTATE_ACTIVE {
			r.violation("the %s %s is %s, not active", what, id, d.GetState())
		}
	}
	for _, req := range r.env.Sim.Requests() {
		for id, what := range r.foreign.devices {
			if req.Method != "GET" && strings.Contains(req.Path, id) {
				r.violation("the controller sent %s %s to the %s", req.Method, req.Path, what)
			}
		}
	}
	for _, name := range r.foreign.nodes {
		n, err := r.env.Kube.CoreV1().Nodes().Get(r.env.Ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			r.violation("node %s, which is not the addon's, was deleted", name)
		case err != nil:
			r.violation("reading node %s: %v", name, err)
		case n.Labels[equinixv1.LabelInstance] != "" || n.Annotations[equinixv1.AnnotationProviderID] != "" || n.Spec.ProviderID != "" ||
			harvester.MaintenanceUnderWay(n):
			r.violation("node %s, which is not the addon's, was changed: labels %v annotations %v", name, n.Labels, n.Annotations)
		}
	}
}

// checkNetworkObjects: no VLAN or reserved IP of this cluster is left, and
// the foreign ones survive.
func (r *run) checkNetworkObjects() {
	for _, v := range r.ourVLANs() {
		r.violation("VLAN %s (VXLAN %d in %s, %q) of this cluster is left behind", v.ID, v.VXLAN, v.Metro, v.Description)
	}
	vlans, err := r.metal.ListVLANs(r.env.Ctx, "")
	if err != nil {
		r.violation("listing VLANs: %v", err)
	}
	for id, what := range r.foreign.vlans {
		if !containsVLAN(vlans, id) {
			r.violation("the %s %s was deleted", what, id)
		}
	}
	ips, err := r.metal.ListIPReservations(r.env.Ctx, metal.ListIPReservationsOptions{})
	if err != nil {
		r.violation("listing IP reservations: %v", err)
	}
	found := map[string]bool{}
	for _, ip := range ips {
		found[ip.ID] = true
		if slices.Contains(ip.Tags, r.clusterTag) {
			r.violation("reserved IP %s (%s) of this cluster is left behind", ip.ID, ip.Address)
		}
	}
	for id, what := range r.foreign.ips {
		if !found[id] {
			r.violation("the %s %s was released", what, id)
		}
	}
}

func containsVLAN(vlans []metal.VirtualNetwork, id string) bool {
	for _, v := range vlans {
		if v.ID == id {
			return true
		}
	}
	return false
}

// checkSecrets: the framework's scan (tokens and the passwords whose Secrets
// exist now) plus every password seen during the run, in the binary's log,
// this process's log, and every object and Event the addon writes.
func (r *run) checkSecrets() {
	r.addon.AssertNoSecretLeaks()
	r.hardware.AssertLogClean()
	blobs := map[string]string{"the controller's log": r.addon.Log(), "the hardware mode's log": r.hardware.Log(),
		"the test process's log": framework.Logs()}
	add := func(what string, list interface{}, err error) {
		if err != nil {
			r.violation("listing %s: %v", what, err)
			return
		}
		raw, _ := json.Marshal(list)
		blobs[what] = string(raw)
	}
	ctx := r.env.Ctx
	pools, err := r.env.Client.EquinixV1().InstancePools().List(ctx, metav1.ListOptions{})
	add("pools", pools, err)
	insts, err := r.env.Client.EquinixV1().Instances().List(ctx, metav1.ListOptions{})
	add("instances", insts, err)
	nodes, err := r.env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	add("nodes", nodes, err)
	invs, err := r.env.Client.MetalV1alpha1().Inventories("").List(ctx, metav1.ListOptions{})
	add("Inventories", invs, err)
	events, err := r.env.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	add("events", events, err)
	passwords := r.passwords.all()
	for _, what := range sortedKeys(blobs) {
		for _, pw := range passwords {
			if i := strings.Index(blobs[what], pw); i >= 0 {
				r.violation("a console password leaked into %s (near %q)", what, blobs[what][max(0, i-80):i])
			}
		}
	}
}

// checkControllerLog: a panic, even one lasso recovered, is a bug.
func (r *run) checkControllerLog() {
	for _, line := range strings.Split(r.addon.Log()+"\n"+r.hardware.Log(), "\n") {
		if strings.Contains(line, "panic") {
			r.violation("the controller panicked: %s", line)
		}
	}
}

// reportOrphans logs the devices the sweep had to delete: allowed (the
// invariant holds after the sweep), but each one is worth a look.
func (r *run) reportOrphans() {
	events, err := r.env.Kube.CoreV1().Events("").List(r.env.Ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	var msgs []string
	for _, ev := range events.Items {
		if ev.Reason == "OrphanDeleted" {
			msgs = append(msgs, ev.Message)
		}
	}
	sort.Strings(msgs)
	if len(msgs) > 0 {
		r.t.Logf("seed %d: the sweep deleted %d orphan(s):\n  %s", r.plan.Seed, len(msgs), strings.Join(msgs, "\n  "))
	}
}
