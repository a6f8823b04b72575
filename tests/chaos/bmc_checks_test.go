package chaos

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// quiesceBMCs ends the BMC chaos: the BMCs answer again, every server is
// asked on in maintenance mode (once its last request ended), and once each
// request is over the maintenance ends.
func (r *run) quiesceBMCs() string {
	w := r.bmcs
	w.rf.ClearFaults()
	_ = w.rfSrv.ComeBack()
	if w.relay != nil {
		w.relay.SetDelay(0)
	}
	for _, n := range w.nodes {
		w.maintenance(r, n.name, true)
	}
	asked := map[string]bool{}
	settled := r.poll(2*time.Minute, func() bool {
		w.followCommands(r)
		done := true
		for _, n := range w.nodes {
			inv, err := r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Get(r.env.Ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			pending := inv.Spec.PowerActionRequested != "" && (inv.Status.PowerAction.LastActionStatus == "" || inv.Status.PowerAction.LastJobName == "")
			switch {
			case pending:
				done = false
			case !n.twin && !asked[n.name]:
				if out := w.request(r, n, seederv1alpha1.PowerOperationPowerOn); !strings.HasPrefix(out, "refused") {
					asked[n.name] = true
				}
				done = false
			}
		}
		return done
	})
	for _, n := range w.nodes {
		w.maintenance(r, n.name, false)
	}
	return fmt.Sprintf("BMC servers asked on (requests ended: %t)", settled)
}

// checkBMCs: never more than one open session per BMC, and every power
// command the BMCs got counted against the requests and the nodes'
// maintenance mode, as the devices' power actions are.
func (r *run) checkBMCs() {
	w := r.bmcs
	if most := w.rf.Logins().MostSessions; most > 1 {
		r.violation("the Redfish BMC had %d sessions open at once (sessions %v)", most, w.rf.SessionSpans())
	}
	if w.relay != nil {
		if most := w.relay.MostSessions(); most > 1 {
			r.violation("the IPMI BMC had %d sessions in use at once (sessions %v)", most, w.relay.Sessions())
		}
	}
	for _, n := range w.nodes {
		switch {
		case n.twin:
			continue
		case n.ipmi:
			for _, c := range w.ipmi.ChassisControlLog() {
				r.power.record(appliedAction{at: c.At, node: n.name, uid: n.uid, kind: map[byte]string{0: "off", 1: "on", 2: "reboot"}[c.Byte],
					deviceID: "the IPMI BMC"})
			}
		default:
			for _, reset := range w.rf.ResetLog() {
				kind := map[string]string{"ForceOff": "off", "On": "on", "PowerCycle": "reboot", "ForceRestart": "reboot"}[reset.Type]
				r.power.record(appliedAction{at: reset.At, node: n.name, uid: n.uid, kind: kind, deviceID: "the Redfish BMC"})
			}
		}
	}
}

// bmcSummary is what the BMC world saw, for the run's log line.
func (w *bmcWorld) summary() string {
	logins := w.rf.Logins()
	s := fmt.Sprintf("BMCs: %d power requests, %d Redfish resets, %d Redfish logins (%d refused), most sessions at once: Redfish %d",
		w.requests, len(w.rf.Resets()), logins.Accepted, logins.Refused, logins.MostSessions)
	if w.relay != nil {
		s += fmt.Sprintf(", IPMI %d (%d sessions, %d chassis controls)", w.relay.MostSessions(), len(w.relay.Sessions()), len(w.ipmi.ChassisControls()))
	}
	return s
}

// remove deletes the BMC world's objects from the shared cluster.
func (w *bmcWorld) remove(env *framework.Env) {
	for _, n := range w.nodes {
		_ = env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Delete(env.Ctx, n.name, metav1.DeleteOptions{})
		_ = env.Kube.CoreV1().Secrets(bmcSecrets).Delete(env.Ctx, n.name, metav1.DeleteOptions{})
		_ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, n.name, metav1.DeleteOptions{})
	}
}
