package framework

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rancher/wrangler/v3/pkg/apply"
	"github.com/rancher/wrangler/v3/pkg/condition"
	wranglerYAML "github.com/rancher/wrangler/v3/pkg/yaml"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// What Harvester's own Seeder leaves in a cluster, planted exactly as the
// version Harvester v1.8.0 bundles writes it (its Addon names chart
// harvester-seeder 1.8.0, image rancher/harvester-seeder:v1.8.0, built from
// harvester/seeder v1.8.0). Seeder cannot be built here (the module proxy
// refuses github.com/harvester/seeder), so each write below is the one its
// code makes, through the same libraries where they are the project's too:
//
//   - its CRDs: pkg/crd/crd.go applies the nine CRDs of its bindata
//     (testdata/seeder-v1.8.0/crds, extracted from that bindata) with
//     wrangler's apply and set ID seeder-crd, at every start;
//   - its leader-election Lease: controller-runtime's, on client-go's
//     leaderelection with a LeaseLock named 28b21117.harvesterhci.io in its
//     namespace, 15 s lease, 10 s renew deadline, 2 s retry;
//   - its webhook: harvester/webhook v0.1.4 (pkg/server/server.go) applies
//     a ValidatingWebhookConfiguration harvester-seeder with wrangler's
//     apply (v1.1.1 there, the same apply code as v3's) owned by the CA
//     Secret harvester-seeder-ca that dynamiclistener creates;
//   - its embedded mode: the Cluster harvester-system/local
//     (pkg/util/embedded_cluster.go), per Inventory a rufio Machine owned
//     by it (local_cluster_controller.go ensureMachineExists), its
//     finalizer, and the status its inventory controller writes (wrangler
//     conditions: status and lastUpdateTime strings).

// SeederVersion is the Seeder whose leftovers are planted.
const SeederVersion = "v1.8.0"

// Seeder's names, as its code and chart have them.
const (
	seederCRDSetID      = "seeder-crd"
	seederLeaseDuration = 15 * time.Second
	seederRenewDeadline = 10 * time.Second
	seederRetryPeriod   = 2 * time.Second
	seederValidation    = "/v1/webhook/validation"
	seederWebhookPort   = int32(443)
)

var (
	inventoryGVR = schema.GroupVersionResource{Group: "metal.harvesterhci.io", Version: "v1alpha1", Resource: "inventories"}
	clusterGVR   = schema.GroupVersionResource{Group: "metal.harvesterhci.io", Version: "v1alpha1", Resource: "clusters"}
	machineGVR   = schema.GroupVersionResource{Group: "bmc.tinkerbell.org", Version: "v1alpha1", Resource: "machines"}
)

// SeederCRDDir holds the CRDs of Seeder SeederVersion.
func SeederCRDDir(root string) string {
	return filepath.Join(root, "tests", "framework", "testdata", "seeder-"+SeederVersion, "crds")
}

// ApplySeederCRDs applies Seeder's CRDs as its start does: wrangler apply,
// dynamic lookup, set ID seeder-crd.
func (e *Env) ApplySeederCRDs() {
	e.T.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(e.T, err)
	files, err := filepath.Glob(filepath.Join(SeederCRDDir(root), "*.yaml"))
	require.NoError(e.T, err)
	var objs []runtime.Object
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(e.T, err)
		o, err := wranglerYAML.ToObjects(bytes.NewReader(raw))
		require.NoError(e.T, err)
		objs = append(objs, o...)
	}
	a, err := apply.NewForConfig(e.Cluster.RESTConfig)
	require.NoError(e.T, err)
	require.NoError(e.T, a.WithDynamicLookup().WithContext(e.Ctx).WithSetID(seederCRDSetID).ApplyObjects(objs...))
	e.Eventually(func() bool {
		crd, err := e.Kube.Discovery().ServerResourcesForGroupVersion("bmc.tinkerbell.org/v1alpha1")
		return err == nil && len(crd.APIResources) > 0
	}, 30*time.Second, "Seeder's CRDs were not served")
}

// RunSeederLease takes and renews Seeder's leader-election Lease as its
// running controller does, until the returned stop (Seeder's pod ends;
// the Lease stays with its holder and its last renew time, as
// controller-runtime leaves it without ReleaseOnCancel).
func (e *Env) RunSeederLease() (stop func()) {
	e.T.Helper()
	// A later test must not find this Lease renewed a moment ago.
	e.T.Cleanup(func() {
		_ = e.Kube.CoordinationV1().Leases(seederv1alpha1.SeederAddonNamespace).Delete(context.Background(), seederv1alpha1.SeederLeaseName, metav1.DeleteOptions{})
	})
	ctx, cancel := context.WithCancel(e.Ctx)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: seederv1alpha1.SeederAddonNamespace, Name: seederv1alpha1.SeederLeaseName},
		Client:     e.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "harvester-seeder-6d9f7c8b5-x2kq7_" + randomID()},
	}
	led := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: seederLeaseDuration, RenewDeadline: seederRenewDeadline, RetryPeriod: seederRetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { close(led) }, OnStoppedLeading: func() {}},
		})
	}()
	select {
	case <-led:
	case <-time.After(time.Minute):
		e.T.Fatalf("Seeder's Lease was not taken")
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	e.T.Cleanup(stop)
	return stop
}

// ServeSeederWebhook makes Seeder's Service harvester-seeder as its chart
// does, with the endpoint slice the EndpointSlice controller writes for
// Seeder's ready pod (nothing listens behind it: the apiserver is never
// asked to call it here). RemoveSeederService deletes both, as the Addon's
// removal (helm uninstall) and the garbage collector do.
func (e *Env) ServeSeederWebhook() {
	e.T.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "harvester-seeder", "app.kubernetes.io/instance": "harvester-seeder"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.SeederAddonNamespace, Name: seederv1alpha1.SeederWebhookService, Labels: labels},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: labels, Ports: []corev1.ServicePort{
			{Name: "http", Port: 9443, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
			{Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP},
		}},
	}
	created, err := e.Kube.CoreV1().Services(svc.Namespace).Create(e.Ctx, svc, metav1.CreateOptions{})
	require.NoError(e.T, err)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-7xk2p",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: created.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.52.0.31"}, Conditions: discoveryv1.EndpointConditions{
			Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: svc.Namespace, Name: "harvester-seeder-6d9f7c8b5-x2kq7"}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)},
			{Name: ptr.To("webhook"), Port: ptr.To[int32](443), Protocol: ptr.To(corev1.ProtocolTCP)},
		},
	}
	_, err = e.Kube.DiscoveryV1().EndpointSlices(svc.Namespace).Create(e.Ctx, slice, metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(e.RemoveSeederService)
}

// RemoveSeederService deletes Seeder's Service and its endpoint slices.
func (e *Env) RemoveSeederService() {
	err := e.Kube.CoreV1().Services(seederv1alpha1.SeederAddonNamespace).Delete(e.Ctx, seederv1alpha1.SeederWebhookService, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(e.T, err)
	}
	err = e.Kube.DiscoveryV1().EndpointSlices(seederv1alpha1.SeederAddonNamespace).DeleteCollection(e.Ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + seederv1alpha1.SeederWebhookService})
	require.NoError(e.T, err)
}

// ApplySeederWebhook makes Seeder's webhook configuration as its webhook
// server does once its CA Secret exists: the Secret (dynamiclistener's:
// a kubernetes.io/tls Secret with the CA), then the configuration applied
// with the Secret as owner, the CA as its caBundle, Seeder's two
// validators' rules (clusters and inventories, CREATE and UPDATE).
func (e *Env) ApplySeederWebhook() {
	e.T.Helper()
	certPEM, keyPEM := selfSignedCA(e.T, "dynamiclistener-ca@1767225600")
	secrets := e.Kube.CoreV1().Secrets(seederv1alpha1.SeederAddonNamespace)
	ca, err := secrets.Get(e.Ctx, seederv1alpha1.SeederWebhookCASecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ca, err = secrets.Create(e.Ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.SeederAddonNamespace, Name: seederv1alpha1.SeederWebhookCASecret},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}, metav1.CreateOptions{})
	}
	require.NoError(e.T, err)
	ca.APIVersion, ca.Kind = "v1", "Secret"
	path := seederValidation
	port := seederWebhookPort
	scope := admissionregistrationv1.NamespacedScope
	rule := func(resource string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"metal.harvesterhci.io"}, APIVersions: []string{"v1alpha1"},
				Resources: []string{resource}, Scope: &scope},
		}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: seederv1alpha1.SeederWebhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validator." + seederv1alpha1.SeederAddonNamespace + "." + seederv1alpha1.SeederWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: seederv1alpha1.SeederAddonNamespace,
					Name: seederv1alpha1.SeederWebhookService, Path: &path, Port: &port},
				CABundle: ca.Data[corev1.TLSCertKey],
			},
			// The validators in the order Seeder registers them.
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule("clusters"), rule("inventories")},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
		}},
	}
	a, err := apply.NewForConfig(e.Cluster.RESTConfig)
	require.NoError(e.T, err)
	require.NoError(e.T, a.WithDynamicLookup().WithContext(e.Ctx).WithOwner(ca).ApplyObjects(cfg))
	e.T.Cleanup(func() {
		_ = e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
		_ = secrets.Delete(context.Background(), seederv1alpha1.SeederWebhookCASecret, metav1.DeleteOptions{})
	})
}

// CreateSeederLocalCluster makes the Cluster harvester-system/local that
// Seeder's embedded mode creates at start (and lists each Inventory in).
func (e *Env) CreateSeederLocalCluster(inventories ...string) {
	e.T.Helper()
	var nodes []interface{}
	for _, n := range inventories {
		// Its NodeConfig's references have no omitempty: the pool's is
		// written empty.
		nodes = append(nodes, map[string]interface{}{
			"inventoryReference":   map[string]interface{}{"name": n, "namespace": seederv1alpha1.InventoryNamespace},
			"addressPoolReference": map[string]interface{}{"name": "", "namespace": ""},
		})
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "metal.harvesterhci.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]interface{}{"name": "local", "namespace": seederv1alpha1.InventoryNamespace},
		"spec": map[string]interface{}{"nodes": nodes, "version": "local", "clusterConfig": map[string]interface{}{},
			"vipConfig": map[string]interface{}{"addressPoolReference": map[string]interface{}{"name": "", "namespace": ""}}},
	}}
	clusters := e.dynamic().Resource(clusterGVR).Namespace(seederv1alpha1.InventoryNamespace)
	created, err := clusters.Create(e.Ctx, obj, metav1.CreateOptions{})
	require.NoError(e.T, err)
	// updateLocalCluster: the default service's address, running.
	created.Object["status"] = map[string]interface{}{"clusterAddress": "10.53.0.1", "status": "clusterRunning"}
	_, err = clusters.UpdateStatus(e.Ctx, created, metav1.UpdateOptions{})
	require.NoError(e.T, err)
}

// SeederStatus is the status Seeder's embedded mode leaves on an Inventory
// it served (its v1.8.0 InventoryStatus, the fields it writes there).
type SeederStatus struct {
	Status            string            `json:"status,omitempty"`
	HardwareID        string            `json:"hardwareID,omitempty"`
	Conditions        []SeederCondition `json:"conditions,omitempty"`
	PXEBootConfig     map[string]string `json:"pxeBootConfig,omitempty"`
	PowerAction       map[string]string `json:"powerAction,omitempty"`
	MachinePowerState string            `json:"machinePowerState,omitempty"`
}

// SeederCondition is Seeder's condition: wrangler's, every field a string.
type SeederCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastUpdateTime     string `json:"lastUpdateTime,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

// seederObject is what wrangler's conditions reach by reflection.
type seederObject struct{ Status SeederStatus }

// SeederReadyStatus is the status of an Inventory Seeder made ready: its
// machine created (bmcObjectCreated), the BMC contacted
// (inventoryNodeReady), allocated to the local cluster with the node's
// address, its power as rufio read it, and the last power request
// (pending when job is set and actionStatus not).
func SeederReadyStatus(address, power string, powerAction map[string]string) SeederStatus {
	o := &seederObject{Status: SeederStatus{HardwareID: "5a1f0c3e-6b1e-11f1-9a0b-0242ac120002"}}
	// util.CreateOrUpdateCondition: SetStatus(message), then True.
	set := func(c string, msg string) {
		condition.Cond(c).SetStatus(o, msg)
		condition.Cond(c).True(o)
	}
	set("bmcObjectCreated", "bmc object created")
	o.Status.Status = string(seederv1alpha1.InventoryNodeReady)
	set("inventoryAllocatedToCluster", "node assigned to local cluster")
	o.Status.PXEBootConfig = map[string]string{"address": address}
	o.Status.MachinePowerState = power
	o.Status.PowerAction = powerAction
	if powerAction["lastJobName"] != "" && powerAction["actionStatus"] == "" {
		set("bmcJobSubmitted", "BMCJob Submitted")
	}
	return o.Status
}

// PlantSeederInventory leaves on the Inventory what Seeder's embedded mode
// writes: its finalizer, a rufio Machine it owns, and status.
func (e *Env) PlantSeederInventory(name string, status SeederStatus) {
	e.T.Helper()
	invs := e.dynamic().Resource(inventoryGVR).Namespace(seederv1alpha1.InventoryNamespace)
	inv, err := invs.Get(e.Ctx, name, metav1.GetOptions{})
	require.NoError(e.T, err)
	inv.SetFinalizers(append(inv.GetFinalizers(), seederv1alpha1.SeederFinalizer))
	inv, err = invs.Update(e.Ctx, inv, metav1.UpdateOptions{})
	require.NoError(e.T, err)
	raw, err := json.Marshal(status)
	require.NoError(e.T, err)
	var st map[string]interface{}
	require.NoError(e.T, json.Unmarshal(raw, &st))
	inv.Object["status"] = st
	_, err = invs.UpdateStatus(e.Ctx, inv, metav1.UpdateOptions{})
	require.NoError(e.T, err)
	spec, _, err := unstructured.NestedMap(inv.Object, "spec", "baseboardSpec")
	require.NoError(e.T, err)
	machine := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "bmc.tinkerbell.org/v1alpha1", "kind": "Machine",
		"metadata": map[string]interface{}{"name": name, "namespace": seederv1alpha1.InventoryNamespace,
			"ownerReferences": []interface{}{map[string]interface{}{"apiVersion": "metal.harvesterhci.io/v1alpha1", "kind": "Inventory",
				"name": name, "uid": string(inv.GetUID()), "controller": true, "blockOwnerDeletion": true}}},
		"spec": spec,
	}}
	_, err = e.dynamic().Resource(machineGVR).Namespace(seederv1alpha1.InventoryNamespace).Create(e.Ctx, machine, metav1.CreateOptions{})
	require.NoError(e.T, err)
}

func (e *Env) dynamic() dynamic.Interface {
	e.T.Helper()
	d, err := dynamic.NewForConfig(e.Cluster.RESTConfig)
	require.NoError(e.T, err)
	return d
}

func selfSignedCA(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn, Organization: []string{"dynamiclistener-org"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return new(big.Int).SetBytes(b).Text(36)
}
