package framework

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/tests/harvestercluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// The hardware mode's world: nodes as their kubelets and Harvester mark
// them, and Inventories with their BMC Secrets as Harvester's UI writes
// them.

const (
	// BMCSecretNamespace is where the tests keep the BMC Secrets: a
	// namespace the user picks, not the addon's.
	BMCSecretNamespace = "bmc-secrets"
	// InventoryPollEvery is the Inventories' spec.events.pollingInterval
	// here.
	InventoryPollEvery = "1s"
)

// CreateReadyNode registers a Ready node as the kubelet of a server does;
// it is deleted when the test ends.
func (e *Env) CreateReadyNode(name string) {
	e.T.Helper()
	e.createReadyNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// JoinOwnedServer registers the Node of an Instance of a pool of servers
// people own as its installed server's kubelet does: named as the server
// (its Inventory), with the Instance's label, Ready. It returns the node's
// name.
func (e *Env) JoinOwnedServer(inst *equinixv1.Instance) string {
	e.T.Helper()
	require.NotEmpty(e.T, inst.Status.Server, "Instance %s holds no server", inst.Name)
	e.createReadyNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.Status.Server,
		Labels: map[string]string{equinixv1.LabelInstance: inst.Name}}})
	return inst.Status.Server
}

func (e *Env) createReadyNode(node *corev1.Node) {
	e.T.Helper()
	_, err := e.Kube.CoreV1().Nodes().Create(e.Ctx, node, metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = e.Kube.CoreV1().Nodes().Delete(e.Ctx, node.Name, metav1.DeleteOptions{}) })
	e.SetNodeReady(node.Name, true)
}

// SetNodeReady writes the node's Ready condition as its kubelet (Ready) or
// the node lifecycle controller (NotReady: Unknown) would, again after a
// conflict with the controller's own writes of the node.
func (e *Env) SetNodeReady(name string, ready bool) {
	e.T.Helper()
	require.EventuallyWithT(e.T, func(ct *assert.CollectT) {
		require.NoError(ct, harvestercluster.WriteNodeReady(e.Ctx, e.Kube, name, ready))
	}, 10*time.Second, 100*time.Millisecond)
}

// SetMaintenance puts a node into (or out of) Harvester maintenance mode
// as Harvester marks it once drained: the maintain-status annotation,
// which its node actions read too.
func (e *Env) SetMaintenance(name string, on bool) {
	e.T.Helper()
	value := `"` + string(harvester.MaintenanceCompleted) + `"`
	if !on {
		value = "null"
	}
	_, err := e.Kube.CoreV1().Nodes().Patch(e.Ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+harvester.AnnotationMaintainStatus+`":`+value+`}}}`), metav1.PatchOptions{})
	require.NoError(e.T, err)
}

// CreateBMCSecret creates a BMC's credentials as the UI's Add Secret does:
// in the namespace the user picks (BMCSecretNamespace), keys username and
// password, no label. It is deleted when the test ends.
func (e *Env) CreateBMCSecret(name, user, password string) {
	e.T.Helper()
	_, err := e.Kube.CoreV1().Namespaces().Create(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: BMCSecretNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(e.T, err)
	}
	_, err = e.Kube.CoreV1().Secrets(BMCSecretNamespace).Create(e.Ctx, harvestercluster.BMCSecret(BMCSecretNamespace, name, user, password), metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = e.Kube.CoreV1().Secrets(BMCSecretNamespace).Delete(e.Ctx, name, metav1.DeleteOptions{}) })
}

// RedfishBMC starts the project's Redfish responder shaped by opts (its
// credentials among them); it is closed when the test ends.
func RedfishBMC(t testing.TB, opts bmcsim.Options) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	sim := bmcsim.New(opts)
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return sim, srv
}

// RedfishInventory is the Inventory of node, named after it, whose BMC is
// srv (its port is not 623, so Redfish is spoken), trusting srv's CA, with
// the Secret named after node: what a kubectl user writes (the UI has no
// CA field).
func RedfishInventory(node string, srv *bmcsim.Server) *seederv1alpha1.Inventory {
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: node}}
	inv.Spec.BaseboardManagementSpec.Connection = seederv1alpha1.Connection{
		Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM),
		AuthSecretRef: corev1.SecretReference{Namespace: BMCSecretNamespace, Name: node},
	}
	inv.Spec.Events = seederv1alpha1.Events{Enabled: true, PollingInterval: InventoryPollEvery}
	return inv
}

// IPMIInventory is the Inventory of node whose BMC speaks IPMI on host and
// port. ipmi_sim cannot listen on 623 in the tests (a privileged
// port, maybe taken), so providerOptions.ipmitool.port says where it is, with
// connection.port at the UI's 623.
func IPMIInventory(node, host string, port int) *seederv1alpha1.Inventory {
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: node}}
	inv.Spec.BaseboardManagementSpec.Connection = seederv1alpha1.Connection{
		Host: host, Port: seederv1alpha1.IPMIPort,
		AuthSecretRef:   corev1.SecretReference{Namespace: BMCSecretNamespace, Name: node},
		ProviderOptions: &seederv1alpha1.ProviderOptions{IPMITOOL: &seederv1alpha1.IPMITOOLOptions{Port: port}},
	}
	inv.Spec.Events = seederv1alpha1.Events{Enabled: true, PollingInterval: InventoryPollEvery}
	return inv
}

// CreateInventory creates inv and returns it as stored; it is deleted when
// the test ends.
func (e *Env) CreateInventory(inv *seederv1alpha1.Inventory) *seederv1alpha1.Inventory {
	e.T.Helper()
	invs := e.Client.MetalV1alpha1().Inventories(inv.Namespace)
	out, err := invs.Create(e.Ctx, inv, metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = invs.Delete(e.Ctx, inv.Name, metav1.DeleteOptions{}) })
	return out
}

// Inventory reads an Inventory (they live in one namespace).
func (e *Env) Inventory(name string) *seederv1alpha1.Inventory {
	e.T.Helper()
	inv, err := e.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Get(e.Ctx, name, metav1.GetOptions{})
	require.NoError(e.T, err)
	return inv
}

// WaitPolls waits until the BMC of the node name was polled n more times:
// the controller had that many chances to act. A poll that finds nothing
// new writes no status, so the polls are counted where the controller
// shows them: its metric of the node's last poll (in this process).
func (e *Env) WaitPolls(name string, n int) {
	e.T.Helper()
	seen := 0
	last, _ := LastPoll(name)
	e.Eventually(func() bool {
		if at, ok := LastPoll(name); ok && at.After(last) {
			seen++
			last = at
		}
		return seen >= n
	}, time.Duration(n)*10*time.Second, "the BMC of %s was not polled %d more times", name, n)
}

// LastPoll is the time of the last poll of the node name's BMC, as the
// in-process controller's metric equinix_addon_hardware_last_poll_timestamp_seconds
// says it (whole seconds); ok is false before the node has the series.
func LastPoll(name string) (time.Time, bool) {
	families, err := metrics.Registerer().(prometheus.Gatherer).Gather()
	if err != nil {
		return time.Time{}, false
	}
	for _, f := range families {
		if f.GetName() != "equinix_addon_hardware_last_poll_timestamp_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" && l.GetValue() == name {
					return time.Unix(int64(m.GetGauge().GetValue()), 0), true
				}
			}
		}
	}
	return time.Time{}, false
}
