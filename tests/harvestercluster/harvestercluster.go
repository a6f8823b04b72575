// Package harvestercluster writes, on a Kubernetes cluster, what an installed
// Harvester cluster holds and the addon reads, as Harvester, its UI or an
// operator writes it: the addon's namespace, the VIP ConfigMap and Service,
// the server-version Setting, the credentials Secret, Nodes as their
// kubelets report them, BMC Secrets and power actions as the UI asks them.
// The integration tests (tests/framework) and the local environment
// (tests/cmd/devenv) set their clusters up with it, so the two set-ups are
// one.
package harvestercluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// Cluster is what an installed Harvester cluster holds that the addon reads
// at start.
type Cluster struct {
	// Namespace is the addon's (harvester-system).
	Namespace string
	// VIP is the cluster's virtual IP, in ConfigMap vip.
	VIP string
	// ServerVersion is Setting server-version's value, written only when
	// the Setting is absent (an upgrade is a test's own step).
	ServerVersion string
	// SecretName and Credentials are the credentials Secret an operator
	// creates; it replaces one of that name.
	SecretName  string
	Credentials map[string][]byte
}

// Write creates on the cluster behind cfg what c describes.
func Write(ctx context.Context, cfg *rest.Config, c Cluster) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", c.Namespace, err)
	}
	vip := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: "vip"},
		Data: map[string]string{"ip": c.VIP, "enabled": "true"}}
	if err := ApplyConfigMap(ctx, kube, vip); err != nil {
		return err
	}
	if err := ApplySecret(ctx, kube, CredentialsSecret(c.Namespace, c.SecretName, c.Credentials)); err != nil {
		return err
	}
	return EnsureServerVersion(ctx, cfg, c.ServerVersion)
}

// ApplyConfigMap creates cm or replaces the one of its name.
func ApplyConfigMap(ctx context.Context, kube kubernetes.Interface, cm *corev1.ConfigMap) error {
	cms := kube.CoreV1().ConfigMaps(cm.Namespace)
	existing, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
	if err == nil {
		cm.ResourceVersion = existing.ResourceVersion
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	} else {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// ApplySecret creates s or replaces the one of its name.
func ApplySecret(ctx context.Context, kube kubernetes.Interface, s *corev1.Secret) error {
	secs := kube.CoreV1().Secrets(s.Namespace)
	existing, err := secs.Get(ctx, s.Name, metav1.GetOptions{})
	if err == nil {
		s.ResourceVersion = existing.ResourceVersion
		_, err = secs.Update(ctx, s, metav1.UpdateOptions{})
	} else {
		_, err = secs.Create(ctx, s, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// CredentialsSecret is a credentials Secret as an operator creates it: in
// the addon's namespace, labelled for the addon to read.
func CredentialsSecret(namespace, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{equinixv1.LabelSecret: equinixv1.SecretCredentials}},
		Data: data,
	}
}

// settings are Harvester's Settings. The addon's own client for them is
// read-only, as the addon never writes one, so they are written through
// the dynamic client.
var settings = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}

// EnsureServerVersion creates Setting server-version with version unless
// the Setting exists.
func EnsureServerVersion(ctx context.Context, cfg *rest.Config, version string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	res := dyn.Resource(settings)
	_, err = res.Get(ctx, harvester.ServerVersionSettingName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "harvesterhci.io/v1beta1", "kind": "Setting",
			"metadata": map[string]interface{}{"name": harvester.ServerVersionSettingName},
			"value":    version,
		}}
		_, err = res.Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("setting %s: %w", harvester.ServerVersionSettingName, err)
	}
	return nil
}

// IngressExpose is Service kube-system/ingress-expose of type LoadBalancer
// for the VIP, as Harvester makes it from a static ConfigMap vip (the
// address in kube-vip's annotation, its iptables rules waived); kube-vip
// names the node holding the VIP on it.
func IngressExpose(vip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: equinixv1.VIPServiceNamespace, Name: equinixv1.VIPServiceName,
			Annotations: map[string]string{"kube-vip.io/loadbalancerIPs": vip, "kube-vip.io/ignore-service-security": "true"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "https-internal", Port: 443, TargetPort: intstr.FromInt32(443), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// WriteNodeReady writes the node's Ready condition once, as its kubelet
// (ready) or the node lifecycle controller (not ready: Unknown) would; a
// conflict with another writer of the node is the caller's to retry.
func WriteNodeReady(ctx context.Context, kube kubernetes.Interface, name string, ready bool) error {
	status, reason := corev1.ConditionTrue, "KubeletReady"
	if !ready {
		status, reason = corev1.ConditionUnknown, "NodeStatusUnknown"
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason,
		LastHeartbeatTime: now, LastTransitionTime: now}}
	_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// BMCSecret is a BMC's credentials as the UI's Add Secret makes them: in
// the namespace the user picks, keys username and password, no label.
func BMCSecret(namespace, name, username, password string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data: map[string][]byte{seederv1alpha1.SecretUsernameKey: []byte(username), seederv1alpha1.SecretPasswordKey: []byte(password)}}
}

// inventories are Seeder's Inventories, patched as Harvester's API patches
// them.
var inventories = schema.GroupVersionResource{Group: "metal.harvesterhci.io", Version: "v1alpha1", Resource: "inventories"}

// RequestPowerAction asks for a power operation on the Inventory named
// name with the two writes Harvester's node action powerAction makes: the
// spec's powerActionRequested, then status.powerAction.lastJobName
// cleared.
func RequestPowerAction(ctx context.Context, cfg *rest.Config, name, operation string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	res := dyn.Resource(inventories).Namespace(seederv1alpha1.InventoryNamespace)
	spec := []byte(fmt.Sprintf(`{"spec":{"powerActionRequested":%q}}`, operation))
	if _, err := res.Patch(ctx, name, types.MergePatchType, spec, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("inventory %s: powerActionRequested: %w", name, err)
	}
	status := []byte(`{"status":{"powerAction":{"lastJobName":""}}}`)
	if _, err := res.Patch(ctx, name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("inventory %s: status.powerAction: %w", name, err)
	}
	return nil
}
