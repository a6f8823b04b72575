package bgp

import (
	"context"
	"encoding/base64"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// password is a project BGP password the Metal API hands out with every
// neighbor; it must never reach a node.
const password = "Secret12345AB"

// Metal operations, in the order a first pass makes them.
const (
	getConfig     = metalsim.OpFindBgpConfigByProject
	requestConfig = metalsim.OpRequestBgpConfig
	listSessions  = metalsim.OpFindBgpSessions
	openSession   = metalsim.OpCreateBgpSession
	neighbors     = metalsim.OpGetBgpNeighborData
	getDevice     = metalsim.OpFindDeviceByID
	listDevices   = metalsim.OpFindProjectDevices
)

// server is web-1's Instance, its device recorded in the project.
func server(mods ...func(*equinixv1.Instance)) *equinixv1.Instance {
	i := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	i.Status.InstanceID, i.Status.ProjectID = "{web-1}", project
	for _, m := range mods {
		m(i)
	}
	return i
}

// addonNode is web-1's Node with the given annotations.
func addonNode(annotations map[string]string) func(*world) *corev1.Node {
	return func(*world) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{equinixv1.LabelInstance: "web-1"},
			Annotations: maps.Clone(annotations)}}
	}
}

// labelled adds a label to a node.
func labelled(node func(*world) *corev1.Node, key, value string) func(*world) *corev1.Node {
	return func(w *world) *corev1.Node {
		n := node(w)
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
		return n
	}
}

// firstNode is the cluster's first node, a person's install on web-1 (at
// its public address), with labels.
func firstNode(labels map[string]string) func(*world) *corev1.Node {
	return func(*world) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "harvester-1", Labels: labels},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "147.75.0.1"}}}}
	}
}

// firstNodePeered is a first pass over firstNode in a project without BGP.
var firstNodePeered = peersOutcome{Annotations: ccm("65000", nil), Patches: 1,
	Calls:  []string{listDevices, getConfig, requestConfig, listSessions, openSession, neighbors, getDevice},
	Config: "local 65000", Sessions: []string{"ipv4"},
	Events:   []string{"Normal BGPPeersAnnotated node/harvester-1: BGP peering of device {web-1} written to the node's metal.equinix.com annotations (peers from 169.254.255.1)"},
	Enqueued: []string{"harvester-1 after 10m0s"}}

// foreign are annotations the addon never wrote, one of them under the
// CCM's prefix.
var foreign = map[string]string{"example.com/keep": "x", "metal.equinix.com/bgp-peers-0-note": "a person's"}

// ccm are the annotations of web-1's device in the simulator (its private
// address, Equinix's two peers) for asn, with the addon's marker, and extra.
func ccm(asn string, extra map[string]string) map[string]string {
	out := map[string]string{
		"metal.equinix.com/bgp-peers-0-node-asn": asn,
		"metal.equinix.com/bgp-peers-0-peer-asn": "65530",
		"metal.equinix.com/bgp-peers-0-peer-ip":  "169.254.255.1",
		"metal.equinix.com/bgp-peers-0-src-ip":   "10.64.0.1",
		"metal.equinix.com/bgp-peers-1-node-asn": asn,
		"metal.equinix.com/bgp-peers-1-peer-asn": "65530",
		"metal.equinix.com/bgp-peers-1-peer-ip":  "169.254.255.2",
		"metal.equinix.com/bgp-peers-1-src-ip":   "10.64.0.1",
		"metal.equinix.com/network-4-private":    "10.64.0.0/25",
		equinixv1.AnnotationBGPDevice:            "{web-1}",
	}
	maps.Copy(out, extra)
	return out
}

// withoutMarker is ccm as the Equinix CCM itself would have written it.
func withoutMarker(asn string) map[string]string {
	out := ccm(asn, nil)
	delete(out, equinixv1.AnnotationBGPDevice)
	return out
}

// peersOutcome is what one pass of the chain leaves and costs.
type peersOutcome struct {
	// Annotations are the stored node's, the device's ID named {web-1}.
	Annotations map[string]string
	Patches     int
	Calls       []string
	// Config is the project's BGP config, Sessions the device's.
	Config   string
	Sessions []string
	Events   []string
	Enqueued []string
	Err      string
}

const (
	annotated  = "Normal BGPPeersAnnotated node/web-1: BGP peering of device {web-1} written to the node's metal.equinix.com annotations (peers from 169.254.255.1)"
	deviceGone = "its device {web-1} is gone"
)

func TestAnnotatePeers(t *testing.T) {
	cases := []struct {
		name     string
		instance *equinixv1.Instance
		node     func(*world) *corev1.Node
		// prepared runs one pass first, whose effects are not counted.
		prepared bool
		before   func(*world)
		// client, when set, wraps the chain's Metal client.
		client func(metal.Client) metal.Client
		// selector is --bgp-node-selector.
		selector string
		expected peersOutcome
		// returnsUnpatched: the chain goes on with the node as it was
		// before the removal patch (peering drops what lost returns).
		// Nothing follows this handler on Nodes, so nothing reads it.
		returnsUnpatched bool
	}{
		{name: "a project without BGP gets a local config with the configured ASN, the device one IPv4 session, the node the CCM's annotations",
			instance: server(), node: addonNode(foreign),
			expected: peersOutcome{Annotations: ccm("65000", foreign), Patches: 1,
				Calls:  []string{getConfig, requestConfig, listSessions, openSession, neighbors, getDevice},
				Config: "local 65000", Sessions: []string{"ipv4"},
				Events: []string{annotated}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "the project's own config serves; its password never reaches the node, and one someone wrote there goes",
			instance: server(),
			node: addonNode(map[string]string{"metal.equinix.com/bgp-peers-0-bgp-pass": base64.StdEncoding.EncodeToString([]byte(password)),
				"metal.equinix.com/bgp-pass": password}),
			before: func(w *world) {
				require.NoError(w.t, w.metal.CreateBGPConfig(context.Background(), metal.BGPConfigRequest{ASN: 64512, DeploymentType: metal.BGPDeploymentLocal, MD5: password}))
				w.reset()
			},
			expected: peersOutcome{Annotations: ccm("64512", nil), Patches: 1,
				Calls:  []string{getConfig, listSessions, openSession, neighbors, getDevice},
				Config: "local 64512", Sessions: []string{"ipv4"},
				Events: []string{annotated}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a node at rest costs no call until its resync",
			instance: server(), node: addonNode(nil), prepared: true,
			before: func(w *world) { w.clock.Advance(resync - 1) },
			expected: peersOutcome{Annotations: ccm("65000", nil), Calls: []string{},
				Config: "local 65000", Sessions: []string{"ipv4"}, Events: []string{}, Enqueued: []string{"web-1 after 1ns"}}},
		{name: "at its resync, a session in place costs one list and writes nothing",
			instance: server(), node: addonNode(nil), prepared: true,
			before: func(w *world) { w.clock.Advance(resync) },
			expected: peersOutcome{Annotations: ccm("65000", nil), Calls: []string{listSessions},
				Config: "local 65000", Sessions: []string{"ipv4"}, Events: []string{}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "at its resync, a key kube-vip needs that someone removed is read again and restored",
			instance: server(), node: addonNode(nil), prepared: true,
			before: func(w *world) {
				delete(w.nodes.nodes["web-1"].Annotations, "metal.equinix.com/bgp-peers-0-src-ip")
				w.clock.Advance(resync)
			},
			expected: peersOutcome{Annotations: ccm("65000", nil), Patches: 1, Calls: []string{listSessions, neighbors, getDevice},
				Config: "local 65000", Sessions: []string{"ipv4"}, Events: []string{}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a session deleted while its device lives is opened again",
			instance: server(), node: addonNode(nil), prepared: true,
			before: func(w *world) {
				sessions, err := w.metal.ListBGPSessions(context.Background(), w.device.ID)
				require.NoError(w.t, err)
				require.NoError(w.t, w.metal.DeleteBGPSession(context.Background(), sessions[0].ID))
				w.clock.Advance(resync)
				w.reset()
			},
			expected: peersOutcome{Annotations: ccm("65000", nil),
				Calls:  []string{listSessions, openSession, neighbors, getDevice},
				Config: "local 65000", Sessions: []string{"ipv4"}, Events: []string{}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "when the device goes, the annotations the addon wrote go, never the others",
			instance: server(), node: addonNode(foreign), prepared: true,
			before: func(w *world) {
				require.NoError(w.t, w.sim.DeleteDeviceOutOfBand(w.device.ID))
				w.clock.Advance(resync)
				w.reset()
			},
			expected: peersOutcome{Annotations: foreign, Patches: 1, Calls: []string{listSessions},
				Config: "local 65000", Sessions: []string{},
				Events:   []string{"Normal BGPPeersRemoved node/web-1: BGP peering annotations of device {web-1} removed: " + deviceGone},
				Enqueued: []string{}},
			returnsUnpatched: true},
		{name: "annotations the addon did not write are never removed",
			instance: server(), node: addonNode(withoutMarker("65001")),
			before: func(w *world) {
				require.NoError(w.t, w.sim.DeleteDeviceOutOfBand(w.device.ID))
				w.reset()
			},
			expected: peersOutcome{Annotations: withoutMarker("65001"), Calls: []string{getConfig, requestConfig, listSessions},
				Config: "local 65000", Sessions: []string{},
				Events:   []string{"Warning BGPFailed node/web-1: no BGP peering for this node: " + deviceGone},
				Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "annotations the CCM wrote before the addon, for the session it opened, are brought in line and marked",
			instance: server(), node: addonNode(withoutMarker("65001")),
			before: func(w *world) {
				ctx := context.Background()
				require.NoError(w.t, w.metal.CreateBGPConfig(ctx, metal.BGPConfigRequest{ASN: localASN, DeploymentType: metal.BGPDeploymentLocal}))
				require.NoError(w.t, w.metal.CreateBGPSession(ctx, w.device.ID, metal.BGPSessionRequest{AddressFamily: "ipv4"}))
				w.reset()
			},
			expected: peersOutcome{Annotations: ccm("65000", nil), Patches: 1,
				Calls:  []string{getConfig, listSessions, neighbors, getDevice},
				Config: "local 65000", Sessions: []string{"ipv4"},
				Events: []string{annotated}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a device with only an IPv6 session gets an IPv4 one",
			instance: server(), node: addonNode(nil),
			before: func(w *world) {
				ctx := context.Background()
				require.NoError(w.t, w.metal.CreateBGPConfig(ctx, metal.BGPConfigRequest{ASN: localASN, DeploymentType: metal.BGPDeploymentLocal}))
				require.NoError(w.t, w.metal.CreateBGPSession(ctx, w.device.ID, metal.BGPSessionRequest{AddressFamily: "ipv6"}))
				w.reset()
			},
			expected: peersOutcome{Annotations: ccm("65000", nil), Patches: 1,
				Calls:  []string{getConfig, listSessions, openSession, neighbors, getDevice},
				Config: "local 65000", Sessions: []string{"ipv6", "ipv4"},
				Events: []string{annotated}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "annotations someone removed are written again at once, not at the resync",
			instance: server(), node: addonNode(foreign), prepared: true,
			before: func(w *world) { w.nodes.nodes["web-1"].Annotations = maps.Clone(foreign) },
			expected: peersOutcome{Annotations: ccm("65000", foreign), Patches: 1,
				Calls:  []string{listSessions, neighbors, getDevice},
				Config: "local 65000", Sessions: []string{"ipv4"},
				Events: []string{annotated}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "the first node, a person's install, is matched by its address and peered in the default Secret's project",
			node: firstNode(nil), expected: firstNodePeered},
		{name: "a node labelled with an Instance it is not named like is not taken for the addon's",
			instance: server(func(i *equinixv1.Instance) { i.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: "deleted"} }),
			node:     firstNode(map[string]string{equinixv1.LabelInstance: "web-1"}), expected: firstNodePeered},
		{name: "a node that matches no device is told, and nothing is made for it",
			node: func(*world) *corev1.Node {
				return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stranger"},
					Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.9"}}}}
			},
			expected: peersOutcome{Annotations: nil, Calls: []string{listDevices}, Sessions: []string{},
				Events: []string{"Warning BGPFailed node/stranger: no BGP peering for this node: node stranger: no device of project " + project +
					" has its addresses (192.0.2.9); if the node is an Equinix Metal server of that project, name it: kubectl annotate node stranger equinix.harvesterhci.io/device-id=<device ID>"},
				Enqueued: []string{"stranger after 10m0s"}}},
		{name: "a problem already told is not told again",
			instance: server(func(i *equinixv1.Instance) { i.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: "deleted"} }),
			node:     addonNode(nil), prepared: true,
			expected: peersOutcome{Calls: []string{}, Sessions: []string{}, Events: []string{}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a missing Secret is told, and no call made",
			instance: server(func(i *equinixv1.Instance) { i.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: "deleted"} }),
			node:     addonNode(nil),
			expected: peersOutcome{Calls: []string{}, Sessions: []string{},
				Events:   []string{"Warning BGPFailed node/web-1: no BGP peering for this node: Secret harvester-system/deleted not found: create it with keys METAL_AUTH_TOKEN and PROJECT_ID, labelled equinix.harvesterhci.io/secret=credentials"},
				Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a server in another project than its Secret's is told, and no call made",
			instance: server(func(i *equinixv1.Instance) { i.Status.ProjectID = "b0000000-0000-4000-8000-00000000000b" }),
			node:     addonNode(nil),
			expected: peersOutcome{Calls: []string{}, Sessions: []string{},
				Events:   []string{"Warning BGPFailed node/web-1: no BGP peering for this node: its server is in project b0000000-0000-4000-8000-00000000000b but Secret harvester-system/equinix-addon names project " + project},
				Enqueued: []string{}}},
		{name: "a project whose BGP config is disabled is told, and its config left alone",
			instance: server(), node: addonNode(nil),
			client: func(c metal.Client) metal.Client { return disabledBGP{c} },
			expected: peersOutcome{Calls: []string{}, Sessions: []string{},
				Events: []string{"Warning BGPFailed node/web-1: no BGP peering for this node: enabling BGP on project " + project +
					": the project's BGP config is disabled; enable it in Equinix Metal"},
				Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a session too new to give its neighbors is looked at again shortly, nothing written",
			instance: server(), node: addonNode(nil),
			client: func(c metal.Client) metal.Client { return noNeighborsYet{c} },
			expected: peersOutcome{Calls: []string{getConfig, requestConfig, listSessions, openSession, getDevice},
				Config: "local 65000", Sessions: []string{"ipv4"},
				Events:   []string{"Warning BGPFailed node/web-1: no BGP peering for this node: device {web-1} gives no usable BGP peering yet: the device has no IPv4 BGP neighbor"},
				Enqueued: []string{"web-1 after 15s"}}},
		{name: "a node the node selector leaves out gets nothing and costs no call",
			instance: server(), node: addonNode(foreign), selector: "node-role.kubernetes.io/control-plane=true",
			expected: peersOutcome{Annotations: foreign, Calls: []string{}, Sessions: []string{}, Events: []string{}, Enqueued: []string{}}},
		{name: "a node the node selector picks peers",
			instance: server(), node: labelled(addonNode(foreign), "node-role.kubernetes.io/control-plane", "true"),
			selector: "node-role.kubernetes.io/control-plane=true",
			expected: peersOutcome{Annotations: ccm("65000", foreign), Patches: 1,
				Calls:  []string{getConfig, requestConfig, listSessions, openSession, neighbors, getDevice},
				Config: "local 65000", Sessions: []string{"ipv4"},
				Events: []string{annotated}, Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a node that stops matching the node selector loses the annotations the addon wrote, never the others; its session stays",
			instance: server(), node: addonNode(foreign), prepared: true, selector: "node-role.kubernetes.io/control-plane=true",
			expected: peersOutcome{Annotations: foreign, Patches: 1, Calls: []string{},
				Config: "local 65000", Sessions: []string{"ipv4"},
				Events:   []string{"Normal BGPPeersRemoved node/web-1: BGP peering annotations of device {web-1} removed: the node does not match --bgp-node-selector"},
				Enqueued: []string{}}},
		{name: "a node being deleted is left alone",
			instance: server(),
			node: func(w *world) *corev1.Node {
				n := addonNode(foreign)(w)
				at := metav1.NewTime(now)
				n.DeletionTimestamp = &at
				return n
			},
			expected: peersOutcome{Annotations: foreign, Calls: []string{}, Sessions: []string{}, Events: []string{}, Enqueued: []string{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var insts []*equinixv1.Instance
			if tc.instance != nil {
				insts = append(insts, tc.instance)
			}
			w := newWorld(t, insts...)
			if tc.client != nil {
				w.h.metal = metal.ProviderFunc(func(creds metal.Credentials) (metal.Client, error) {
					c, err := w.provider.Client(creds)
					return tc.client(c), err
				})
			}
			node := tc.node(w)
			w.nodes.nodes[node.Name] = node
			if tc.prepared {
				_, err := w.pass(node.Name)
				require.Empty(t, err)
				w.reset()
			}
			if tc.selector != "" {
				sel, err := labels.Parse(tc.selector)
				require.NoError(t, err)
				w.h.settings.Nodes = sel
			}
			if tc.before != nil {
				tc.before(w)
			}
			returned, err := w.pass(node.Name)
			got := peersOutcome{Err: err, Patches: len(w.nodes.patches), Calls: w.calls(), Events: w.events.list(),
				Enqueued: append([]string{}, w.nodes.enqueued...)}
			stored := w.nodes.nodes[node.Name]
			if stored.Annotations != nil {
				got.Annotations = map[string]string{}
				for k, v := range stored.Annotations {
					got.Annotations[k] = w.named(v)
				}
			}
			got.Config, got.Sessions = w.config(), w.sessions()
			assert.Equal(t, tc.expected, got)
			if !tc.returnsUnpatched {
				assert.Equal(t, stored, returned, "the chain goes on with the node as stored")
			}
			for _, p := range w.nodes.patches {
				assert.NotContains(t, p, password)
				assert.NotContains(t, p, base64.StdEncoding.EncodeToString([]byte(password)))
			}
		})
	}
}

// disabledBGP is a project whose BGP config someone disabled.
type disabledBGP struct{ metal.Client }

func (disabledBGP) GetBGPConfig(context.Context) (*metal.BGPConfig, error) {
	return &metal.BGPConfig{ID: "c3f0a1e2-0000-4000-8000-000000000001", ASN: localASN, DeploymentType: metal.BGPDeploymentLocal, Status: "disabled"}, nil
}

// A problem told, then fixed, is told again when it comes back.
func TestAProblemIsToldAgainOnceItCameBack(t *testing.T) {
	w := newWorld(t, server())
	w.nodes.nodes["web-1"] = addonNode(nil)(w)
	missing := "Warning BGPFailed node/web-1: no BGP peering for this node: Secret harvester-system/equinix-addon not found: " +
		"create it with keys METAL_AUTH_TOKEN and PROJECT_ID, labelled equinix.harvesterhci.io/secret=credentials"
	secret := w.secrets["equinix-addon"]
	var errs []string
	for _, present := range []bool{false, true, false} {
		if present {
			w.secrets["equinix-addon"] = secret
		} else {
			delete(w.secrets, "equinix-addon")
		}
		_, err := w.pass("web-1")
		errs = append(errs, err)
	}
	assert.Equal(t, []string{"", "", ""}, errs)
	assert.Equal(t, []string{missing, annotated, missing}, w.events.list())
}

// noNeighborsYet is a session the API gives no neighbor data for yet.
type noNeighborsYet struct{ metal.Client }

func (noNeighborsYet) ListBGPNeighbors(context.Context, string) ([]metal.BGPNeighbor, error) {
	return []metal.BGPNeighbor{}, nil
}

// A node matched by its address whose device turns out to be gone is
// matched afresh, not against the device it was matched to before.
func TestAGoneDeviceIsLookedForAgain(t *testing.T) {
	w := newWorld(t)
	w.nodes.nodes["harvester-1"] = firstNode(nil)(w)
	// The first pass matches the node, then cannot read the project's
	// config: nothing is written, the match is remembered.
	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{getConfig}, Count: 1})
	_, err := w.pass("harvester-1")
	require.Empty(t, err)
	require.NoError(t, w.sim.DeleteDeviceOutOfBand(w.device.ID))
	w.clock.Advance(resync)
	_, err = w.pass("harvester-1")
	require.Empty(t, err)

	w.clock.Advance(resync)
	w.reset()
	_, err = w.pass("harvester-1")
	assert.Equal(t, peersOutcome{Calls: []string{listDevices}, Events: []string{
		"Warning BGPFailed node/harvester-1: no BGP peering for this node: node harvester-1: no device of project " + project +
			" has its addresses (147.75.0.1); if the node is an Equinix Metal server of that project, name it: kubectl annotate node harvester-1 equinix.harvesterhci.io/device-id=<device ID>"},
		Enqueued: []string{"harvester-1 after 10m0s"}},
		peersOutcome{Err: err, Calls: w.calls(), Events: w.events.list(), Enqueued: w.nodes.enqueued})
}
