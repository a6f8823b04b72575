package framework

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/harvestercluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// ReserveVIP makes the cluster VIP an Elastic IP of the test project in
// metro, as an operator who reserved it before installing Harvester has.
func (e *Env) ReserveVIP(metro string) string {
	e.T.Helper()
	id, err := e.Sim.AddIPReservation(ProjectID, metalsim.IPReservationSpec{CIDR: VIP + "/32", Metro: metro, Tags: []string{"harvester-vip"}})
	require.NoError(e.T, err)
	return id
}

// IngressExpose creates Service kube-system/ingress-expose of type
// LoadBalancer for the VIP, as Harvester does from a static ConfigMap vip
// (the address in kube-vip's annotation, its iptables rules waived), and
// deletes it when the test ends.
func (e *Env) IngressExpose() {
	e.T.Helper()
	svc := harvestercluster.IngressExpose(VIP)
	services := e.Kube.CoreV1().Services(equinixv1.VIPServiceNamespace)
	_, err := services.Create(e.Ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		require.NoError(e.T, services.Delete(e.Ctx, svc.Name, metav1.DeleteOptions{}))
		e.Eventually(func() bool {
			_, err := services.Get(e.Ctx, svc.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second, "the previous test's Service did not go")
		_, err = services.Create(e.Ctx, svc, metav1.CreateOptions{})
	}
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = services.Delete(e.Ctx, svc.Name, metav1.DeleteOptions{}) })
}

// SetVIPHost plays kube-vip taking the VIP on node: it names the node in
// the Service's kube-vip.io/vipHost annotation.
func (e *Env) SetVIPHost(node string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{equinixv1.AnnotationVIPHost: node}}})
	if err != nil {
		return err
	}
	_, err = e.Kube.CoreV1().Services(equinixv1.VIPServiceNamespace).Patch(e.Ctx, equinixv1.VIPServiceName, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// FirstNode plays the first Harvester node, which a person installed: a
// device created in the project through the API and a Ready Node whose
// addresses are the device's, without the addon's labels. It returns the
// device ID; the Node is deleted when the test ends.
func (e *Env) FirstNode(name, metro string) string {
	e.T.Helper()
	dev := e.personsDevice(name, metro)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	created, err := e.Kube.CoreV1().Nodes().Create(e.Ctx, node, metav1.CreateOptions{})
	require.NoError(e.T, err)
	created.Status = corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeHostName, Address: name},
			{Type: corev1.NodeInternalIP, Address: dev.PublicIPv4()},
		},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	_, err = e.Kube.CoreV1().Nodes().UpdateStatus(e.Ctx, created, metav1.UpdateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = e.Kube.CoreV1().Nodes().Delete(e.Ctx, name, metav1.DeleteOptions{}) })
	return dev.ID
}

// personsDevice is a device a person created through the API, once active
// with its addresses.
func (e *Env) personsDevice(name, metro string) *metal.Device {
	e.T.Helper()
	c := e.MetalClient(MetalToken, ProjectID)
	d, err := c.CreateDevice(e.Ctx, metal.CreateDeviceRequest{Hostname: name, Plan: "c3.small.x86", Metro: metro,
		OperatingSystem: "ubuntu_22_04", BillingCycle: "hourly"})
	require.NoError(e.T, err)
	var dev *metal.Device
	e.Eventually(func() bool {
		dev, err = c.GetDevice(e.Ctx, d.ID)
		return err == nil && dev.State == metal.DeviceStateActive && dev.PublicIPv4() != "" && dev.PrivateIPv4() != ""
	}, time.Minute, "the device of node %s did not become active", name)
	return dev
}

// ElasticIP reads an ElasticIP; nil when it does not exist.
func (e *Env) ElasticIP(name string) *equinixv1.ElasticIP {
	eip, err := e.Client.EquinixV1().ElasticIPs().Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return eip
}

// DeleteElasticIPsAtEnd deletes every ElasticIP when the test ends, while
// the controller still runs to release them (see DeleteElasticIPs).
func (e *Env) DeleteElasticIPsAtEnd() {
	e.T.Cleanup(e.DeleteElasticIPs)
}

// DeleteElasticIPs deletes every ElasticIPPool and ElasticIP and waits for
// them to go, which takes a running controller. ConfigMap vip goes first,
// or the addon would make the VIP's again (New puts it back for the next
// test), and the pools before the ElasticIPs, or they would make theirs
// again.
func (e *Env) DeleteElasticIPs() {
	_ = e.Kube.CoreV1().ConfigMaps(Namespace).Delete(e.Ctx, "vip", metav1.DeleteOptions{})
	e.DeleteElasticIPPools()
	eips := e.Client.EquinixV1().ElasticIPs()
	_ = eips.DeleteCollection(e.Ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	e.Eventually(func() bool {
		list, err := eips.List(e.Ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0
	}, time.Minute, "ElasticIPs remain")
}

// AddressLedger follows, from the simulator's notifications, which devices
// hold an address: every assignment and unassignment changes a device's
// network and is notified, in order, before the request is answered.
type AddressLedger struct {
	address string

	mu      sync.Mutex
	holders map[string]bool
	max     int
	// overlaps describes each moment the address was on several devices.
	overlaps []string
	changes  int
}

// WatchAddress starts a ledger of address; it stops when the test ends.
func (e *Env) WatchAddress(address string) *AddressLedger {
	l := &AddressLedger{address: address, holders: map[string]bool{}}
	for _, d := range e.Sim.Devices(ProjectID) {
		if net, err := e.Sim.DeviceNetwork(d.GetId()); err == nil && holds(net, address) {
			l.holders[d.GetId()] = true
		}
	}
	l.max = len(l.holders)
	e.T.Cleanup(e.Sim.Subscribe(l.observe))
	return l
}

func holds(n metalsim.NetworkState, address string) bool {
	return slices.ContainsFunc(n.Addresses, func(a metalsim.Address) bool { return a.Address == address })
}

func (l *AddressLedger) observe(n metalsim.Notification) {
	l.mu.Lock()
	defer l.mu.Unlock()
	has := n.Type != metalsim.DeviceDeleted && holds(n.Network, l.address)
	if has == l.holders[n.DeviceID] {
		return
	}
	l.changes++
	if has {
		l.holders[n.DeviceID] = true
	} else {
		delete(l.holders, n.DeviceID)
	}
	l.max = max(l.max, len(l.holders))
	if len(l.holders) > 1 {
		l.overlaps = append(l.overlaps, fmt.Sprintf("%s on %s at %s", l.address, strings.Join(sortedHolders(l.holders), " and "), n.Time.Format(time.RFC3339Nano)))
	}
}

func sortedHolders(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Holders are the devices holding the address now.
func (l *AddressLedger) Holders() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return sortedHolders(l.holders)
}

// Overlaps lists every moment the address was on more than one device.
func (l *AddressLedger) Overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.overlaps)
}

// Changes counts the assignments and unassignments seen.
func (l *AddressLedger) Changes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changes
}

// CloudProviderNode plays a server a person installed whose kubelet runs
// with --cloud-provider=external and --node-ip set to the device's private
// address: a device created through the API and a Node registered tainted
// node.cloudprovider.kubernetes.io/uninitialized, without addresses, the
// address in alpha.kubernetes.io/provided-node-ip. It returns the device
// ID; the Node is deleted when the test ends.
func (e *Env) CloudProviderNode(name, metro string) string {
	e.T.Helper()
	dev := e.personsDevice(name, metro)
	_, err := e.Kube.CoreV1().Nodes().Create(e.Ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name},
			Annotations: map[string]string{"alpha.kubernetes.io/provided-node-ip": dev.PrivateIPv4()}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true",
			Effect: corev1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = e.Kube.CoreV1().Nodes().Delete(e.Ctx, name, metav1.DeleteOptions{}) })
	return dev.ID
}
