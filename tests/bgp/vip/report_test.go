package vip

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

func patchNode(t *testing.T, w *world, name string, patch map[string]any) {
	t.Helper()
	raw, err := json.Marshal(patch)
	require.NoError(t, err)
	_, err = w.Kube.CoreV1().Nodes().Patch(w.Ctx, name, types.MergePatchType, raw, metav1.PatchOptions{})
	require.NoError(t, err)
}

// stays checks the VIP stays on dev while the controller has every reason
// to look at it: no assignment changes at all.
func (w *world) stays(dev string) {
	w.T.Helper()
	changes := w.ledger.Changes()
	assert.Never(w.T, func() bool { return w.ledger.Changes() != changes }, 3*time.Second, 100*time.Millisecond,
		"the VIP was moved away from the node kube-vip names")
	assert.Equal(w.T, []string{dev}, w.ledger.Holders())
}

// A VIP holder kube-vip keeps naming while it is in maintenance, cordoned
// or not Ready is reported, with an Event, and the address stays with it:
// that is where kube-vip answers.
func TestUnhealthyVIPHolderIsReportedNotFought(t *testing.T) {
	env := framework.New(t, &shared, inProcess(nil))
	env.DeleteElasticIPsAtEnd()
	w := newWorld(t, env, "health", 1)
	w.follow(w.first, time.Minute)

	patchNode(t, w, w.first, map[string]any{"metadata": map[string]any{"annotations": map[string]any{harvester.AnnotationMaintainStatus: "running"}}})
	c := w.condition(equinixv1.ElasticIPHostHealthy, metav1.ConditionFalse, equinixv1.ReasonHostInMaintenance, 30*time.Second)
	assert.Contains(t, c.Message, "kube-vip still names node "+w.first+", which is in maintenance mode")
	assert.True(t, env.EventRecorded(equinixv1.VIPElasticIPName, equinixv1.ReasonHostInMaintenance))
	w.stays(w.firstDevice)
	eip := env.ElasticIP(equinixv1.VIPElasticIPName)
	assert.Equal(t, equinixv1.ElasticIPPhaseAssigned, eip.Status.Status, "still where kube-vip answers")

	patchNode(t, w, w.first, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{harvester.AnnotationMaintainStatus: nil}},
		"spec":     map[string]any{"unschedulable": true},
	})
	w.condition(equinixv1.ElasticIPHostHealthy, metav1.ConditionFalse, equinixv1.ReasonHostCordoned, 30*time.Second)
	patchNode(t, w, w.first, map[string]any{"spec": map[string]any{"unschedulable": nil}})
	w.condition(equinixv1.ElasticIPHostHealthy, metav1.ConditionTrue, equinixv1.ReasonHostHealthy, 30*time.Second)

	// A server that stopped being Ready two minutes ago, long past the time
	// kube-vip needs to move.
	w.follow(w.servers[0], time.Minute)
	require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, w.servers[0], time.Now().Add(-2*time.Minute)))
	w.condition(equinixv1.ElasticIPHostHealthy, metav1.ConditionFalse, equinixv1.ReasonHostNotReady, 30*time.Second)
	w.stays(w.devices[w.servers[0]])
	require.NoError(t, env.Agent.SetNodeReady(env.Ctx, w.servers[0]))
	w.condition(equinixv1.ElasticIPHostHealthy, metav1.ConditionTrue, equinixv1.ReasonHostHealthy, 30*time.Second)
	w.noOverlap()
}

// A node kube-vip names whose server is unknown is reported with what to
// do, and the address stays where it is; the person's annotation settles it.
func TestUnmatchedVIPHolderIsReportedNeverGuessed(t *testing.T) {
	env := framework.New(t, &shared, inProcess(nil))
	env.DeleteElasticIPsAtEnd()
	w := newWorld(t, env, "unmatched", 0)
	w.follow(w.first, time.Minute)

	stranger := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stranger"}}
	_, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, stranger, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, stranger.Name, metav1.DeleteOptions{}) })
	require.NoError(t, env.SetVIPHost(stranger.Name))
	c := w.condition(equinixv1.ElasticIPHostMatched, metav1.ConditionFalse, equinixv1.ReasonHostUnmatched, 30*time.Second)
	assert.Contains(t, c.Message, "kubectl annotate node stranger "+equinixv1.AnnotationDeviceID+"=<device ID>")
	assert.True(t, env.EventRecorded(equinixv1.VIPElasticIPName, equinixv1.ReasonHostUnmatched))
	w.stays(w.firstDevice)
	assert.Equal(t, equinixv1.ElasticIPPhaseWaiting, env.ElasticIP(equinixv1.VIPElasticIPName).Status.Status)

	dev, err := w.metal.CreateDevice(env.Ctx, metal.CreateDeviceRequest{Hostname: "stranger", Plan: "c3.small.x86", Metro: metro,
		OperatingSystem: "ubuntu_22_04", BillingCycle: "hourly"})
	require.NoError(t, err)
	w.devices[stranger.Name] = dev.ID
	patchNode(t, w, stranger.Name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{equinixv1.AnnotationDeviceID: dev.ID}}})
	w.waitOn(stranger.Name, time.Minute)
	c = w.condition(equinixv1.ElasticIPHostMatched, metav1.ConditionTrue, equinixv1.ReasonHostMatched, time.Second)
	assert.Contains(t, c.Message, "found by its annotation")
	w.noOverlap()
}

// Refused credentials stop a pass before anything changes: no unassign,
// no assign, until they work again.
func TestRefusedCredentialsChangeNothing(t *testing.T) {
	env := framework.New(t, &shared, inProcess(nil))
	env.DeleteElasticIPsAtEnd()
	w := newWorld(t, env, "refused", 1)
	w.follow(w.first, time.Minute)
	writes := func() int {
		return len(env.Sim.RequestsFor(metalsim.OpDeleteIPAddress)) + len(env.Sim.RequestsFor(metalsim.OpCreateIPAssignment))
	}

	// 403 on everything the chain reads.
	forbidden := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{
		metalsim.OpFindIPAddressByID, metalsim.OpFindIPReservations, metalsim.OpFindDeviceByID, metalsim.OpFindProjectDevices}})
	before := writes()
	require.NoError(t, env.SetVIPHost(w.servers[0]))
	c := w.condition(equinixv1.ElasticIPCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid, 30*time.Second)
	assert.Contains(t, c.Message, "nothing is changed until they work")
	w.stays(w.firstDevice)
	assert.Equal(t, before, writes(), "no unassign or assign was sent")
	env.Sim.RemoveFault(forbidden)
	w.waitOn(w.servers[0], time.Minute)

	// 401: a token Equinix does not know. The controller learns of the
	// Secret and of kube-vip's new holder through two watches: the holder
	// is named once it has refused the token, or it could move the VIP
	// with the old one before it saw the new.
	env.SetSecretData(map[string]string{"METAL_AUTH_TOKEN": "revoked-token", "PROJECT_ID": framework.ProjectID, "JOIN_TOKEN": framework.JoinToken})
	w.condition(equinixv1.ElasticIPCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid, 30*time.Second)
	before = writes()
	require.NoError(t, env.SetVIPHost(w.first))
	env.Eventually(func() bool {
		e := env.ElasticIP(equinixv1.VIPElasticIPName)
		return e.Status.NodeName == w.first && !conditions.IsTrue(e.Status.Conditions, equinixv1.ElasticIPCredentialsReady)
	}, 30*time.Second, "no pass with the refused token saw kube-vip name %s", w.first)
	w.stays(w.devices[w.servers[0]])
	assert.Equal(t, before, writes())
	env.SetSecretData(map[string]string{"METAL_AUTH_TOKEN": framework.MetalToken, "PROJECT_ID": framework.ProjectID, "JOIN_TOKEN": framework.JoinToken})
	w.waitOn(w.first, time.Minute)
	w.noOverlap()
	env.AssertNoSecretLeaks()
}

// An ElasticIP a person makes for a LoadBalancer Service's address follows
// that Service's vipHost. Deleting it (policy Unassign) takes the address
// off only where the addon put it; an address that is not the project's is
// never touched, and no reservation is ever released.
func TestDeletionUnassignsOnlyWhatTheAddonAssigned(t *testing.T) {
	env := framework.New(t, &shared, inProcess(nil))
	env.DeleteElasticIPsAtEnd()
	w := newWorld(t, env, "release", 1)
	const lbIP = "147.75.200.1"
	resID, err := env.Sim.AddIPReservation(framework.ProjectID, metalsim.IPReservationSpec{CIDR: lbIP + "/32", Metro: metro})
	require.NoError(t, err)
	lb := env.WatchAddress(lbIP)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{equinixv1.AnnotationVIPHost: w.first}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	_, err = env.Kube.CoreV1().Services("default").Create(env.Ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Services("default").Delete(env.Ctx, "web", metav1.DeleteOptions{}) })
	eips := env.Client.EquinixV1().ElasticIPs()
	create := func() {
		_, err := eips.Create(env.Ctx, &equinixv1.ElasticIP{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: equinixv1.ElasticIPSpec{Address: lbIP, Service: &equinixv1.ServiceReference{Namespace: "default", Name: "web"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	deleteAndWait := func() {
		require.NoError(t, eips.Delete(env.Ctx, "web", metav1.DeleteOptions{}))
		env.Eventually(func() bool { return env.ElasticIP("web") == nil }, time.Minute, "ElasticIP web was not deleted")
	}
	assigned := func(dev string, byAddon bool) {
		env.Eventually(func() bool {
			e := env.ElasticIP("web")
			return e != nil && e.Status.Status == equinixv1.ElasticIPPhaseAssigned && e.Status.DeviceID == dev &&
				e.Status.AssignedByAddon == byAddon && slices.Equal(lb.Holders(), []string{dev})
		}, time.Minute, "web is not on %s", dev)
	}

	// Assigned by hand where the Service's vipHost already is.
	_, err = w.metal.AssignIP(env.Ctx, w.firstDevice, lbIP)
	require.NoError(t, err)
	create()
	assigned(w.firstDevice, false)
	assert.Equal(t, equinixv1.ElasticIPUnassign, env.ElasticIP("web").Spec.DeletionPolicy, "the default policy")
	deleteAndWait()
	assert.Equal(t, []string{w.firstDevice}, lb.Holders(), "an assignment found in place is kept")

	// Moved by the addon: taken back on deletion.
	create()
	assigned(w.firstDevice, false)
	patch := []byte(`{"metadata":{"annotations":{"` + equinixv1.AnnotationVIPHost + `":"` + w.servers[0] + `"}}}`)
	_, err = env.Kube.CoreV1().Services("default").Patch(env.Ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	assigned(w.devices[w.servers[0]], true)
	deleteAndWait()
	assert.Empty(t, lb.Holders(), "the assignment the addon made is taken back")
	assert.True(t, env.EventRecorded("web", equinixv1.ReasonUnassigned))
	_, err = w.metal.GetIPReservation(env.Ctx, resID)
	require.NoError(t, err, "the reservation is never released")

	// An address that is no reservation of the project.
	_, err = eips.Create(env.Ctx, &equinixv1.ElasticIP{ObjectMeta: metav1.ObjectMeta{Name: "stray"},
		Spec: equinixv1.ElasticIPSpec{Address: "198.51.100.7", Service: &equinixv1.ServiceReference{Namespace: "default", Name: "web"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		e := env.ElasticIP("stray")
		return e != nil && slices.ContainsFunc(e.Status.Conditions, func(c metav1.Condition) bool {
			return c.Type == equinixv1.ElasticIPReserved && c.Reason == equinixv1.ReasonNotReserved && strings.Contains(c.Message, "198.51.100.7 lies in no")
		})
	}, 30*time.Second, "the stray address was not reported")
	assert.Empty(t, env.Sim.RequestsFor(metalsim.OpRequestIPReservation), "nothing is ever reserved")
	assert.Empty(t, lb.Overlaps())
}
