package sweep

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// addonNode is the NotReady Node an Instance of pool web registered as,
// labelled with device "d-<name>"; mods shape it.
func addonNode(name string, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-uid-" + name), Labels: map[string]string{
			equinixv1.LabelInstance: name, equinixv1.LabelPool: "web", equinixv1.LabelDeviceID: "d-" + name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func labelled(key, value string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		if value == "" {
			delete(n.Labels, key)
			return
		}
		n.Labels[key] = value
	}
}

// nodeOutcome is which Nodes a sweep leaves and what it said.
type nodeOutcome struct {
	Nodes  []string
	Events []string
	Err    string
}

func TestSweepOrphanedNodes(t *testing.T) {
	deleted := "Warning OrphanNodeDeleted pool/web: deleted node web-1: the addon installed it, but its Instance and its device \"d-web-1\" no longer exist"
	cases := []struct {
		name     string
		given    given
		fault    *metalsim.Fault
		expected nodeOutcome
	}{
		{name: "a NotReady Node whose Instance and device are gone is deleted",
			given:    given{pools: []*equinixv1.InstancePool{pool("web")}, nodes: []*corev1.Node{addonNode("web-1")}},
			expected: nodeOutcome{Nodes: []string{}, Events: []string{deleted}}},
		{name: "a Ready Node stays",
			given: given{nodes: []*corev1.Node{addonNode("web-1", func(n *corev1.Node) {
				n.Status.Conditions[0].Status = corev1.ConditionTrue
			})}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{}}},
		{name: "a Node not named like the Instance its label names (an owned server's, named after its Inventory) is not swept",
			given:    given{nodes: []*corev1.Node{addonNode("harvester-1", labelled(equinixv1.LabelInstance, "web-1"))}},
			expected: nodeOutcome{Nodes: []string{"harvester-1"}, Events: []string{}}},
		{name: "a Node without the Instance label is not the addon's",
			given:    given{nodes: []*corev1.Node{addonNode("web-1", labelled(equinixv1.LabelInstance, ""))}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{}}},
		{name: "a Node being deleted is left to its deletion",
			given: given{nodes: []*corev1.Node{addonNode("web-1", func(n *corev1.Node) {
				at := metav1.NewTime(now)
				n.DeletionTimestamp = &at
			})}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{}}},
		{name: "a Node whose Instance is cached stays",
			given:    given{nodes: []*corev1.Node{addonNode("web-1")}, instances: []*equinixv1.Instance{instance("web-1")}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{}}},
		{name: "a Node whose Instance was created a moment ago, not cached yet, stays",
			given:    given{nodes: []*corev1.Node{addonNode("web-1")}, live: []*equinixv1.Instance{instance("web-1")}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{}}},
		{name: "a Node whose Instance the cache still shows stays until the cache catches up",
			given:    given{nodes: []*corev1.Node{addonNode("web-1")}, stale: []*equinixv1.Instance{instance("web-1")}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{}}},
		{name: "a Node whose device is still listed stays",
			given: given{nodes: []*corev1.Node{addonNode("web-1", labelled(equinixv1.LabelDeviceID, "{other-name}"))},
				devices: []device{{hostname: "other-name", tags: ours(), age: time.Minute}}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{
				"Warning OrphanDevice namespace/harvester-system: device {other-name} (other-name) carries this cluster's tag but no Instance claims it; it is deleted once 1h0m0s old (now 1m0s)"}}},
		{name: "a Node whose device is listed under its hostname stays",
			given: given{nodes: []*corev1.Node{addonNode("web-1", labelled(equinixv1.LabelDeviceID, ""))},
				devices: []device{{hostname: "web-1", project: projectB, tags: ours(), age: time.Minute}},
				pools:   []*equinixv1.InstancePool{poolIn("b", "b", "da")}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{
				"Warning OrphanDevice namespace/harvester-system: device {web-1} (web-1) carries this cluster's tag but no Instance claims it; it is deleted once 1h0m0s old (now 1m0s)"}}},
		{name: "nothing is deleted while a project cannot be looked into",
			given: given{nodes: []*corev1.Node{addonNode("web-1")}, ledger: `{"c0000000-0000-4000-8000-00000000000c":["da"]}`},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{
				"Warning ProjectUnreachable namespace/harvester-system: the addon made objects in Equinix Metal project c0000000-0000-4000-8000-00000000000c (metros da) but no Secret labelled equinix.harvesterhci.io/secret=credentials holds its credentials any more: devices or VLANs left there cannot be found or released until one does"}}},
		{name: "nothing is deleted while a project's devices cannot be listed",
			given: given{nodes: []*corev1.Node{addonNode("web-1")}},
			fault: &metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{metalsim.OpFindProjectDevices}},
			expected: nodeOutcome{Nodes: []string{"web-1"}, Events: []string{},
				Err: "listing devices of project a0000000-0000-4000-8000-00000000000a: metal ListDevices: 403 Forbidden: You are not authorized to view this resource"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.given)
			if tc.fault != nil {
				w.sim.InjectFault(*tc.fault)
			}
			got := nodeOutcome{Err: w.sweep()}
			got.Nodes, got.Events = w.nodes.remaining(), w.events.list()
			assert.Equal(t, tc.expected, got)
		})
	}
}
