package framework

import (
	"encoding/json"
	"net/netip"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// CreateElasticIPPool makes an ElasticIPPool of quantity addresses in
// metro; it is deleted when the test ends (DeleteElasticIPs waits for it).
func (e *Env) CreateElasticIPPool(name, metro string, quantity int32) *equinixv1.ElasticIPPool {
	e.T.Helper()
	pool, err := e.Client.EquinixV1().ElasticIPPools().Create(e.Ctx, &equinixv1.ElasticIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       equinixv1.ElasticIPPoolSpec{Metro: metro, Quantity: quantity},
	}, metav1.CreateOptions{})
	require.NoError(e.T, err)
	return pool
}

// ElasticIPPool reads an ElasticIPPool; nil when it does not exist.
func (e *Env) ElasticIPPool(name string) *equinixv1.ElasticIPPool {
	p, err := e.Client.EquinixV1().ElasticIPPools().Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

// WaitElasticIPPoolReady waits until the pool's block is reserved and
// offered, and returns the pool.
func (e *Env) WaitElasticIPPoolReady(name string, timeout time.Duration) *equinixv1.ElasticIPPool {
	e.T.Helper()
	var pool *equinixv1.ElasticIPPool
	e.Eventually(func() bool {
		pool = e.ElasticIPPool(name)
		return pool != nil && pool.Status.CIDR != "" && conditions.IsTrue(pool.Status.Conditions, equinixv1.ElasticIPPoolReady)
	}, timeout, "ElasticIPPool %s did not become ready", name)
	return pool
}

// PoolAddress is the i-th address of the pool's block, as
// harvester-load-balancer hands them out of the IPPool's range.
func PoolAddress(pool *equinixv1.ElasticIPPool, i int) string {
	block := netip.MustParsePrefix(pool.Status.CIDR)
	a := block.Addr()
	for ; i > 0; i-- {
		a = a.Next()
	}
	return a.String()
}

// LoadBalancerService plays harvester-load-balancer: a Service of type
// LoadBalancer whose address, taken from an IPPool, is in kube-vip's
// annotation. It is deleted when the test ends.
func (e *Env) LoadBalancerService(namespace, name, address string) *corev1.Service {
	e.T.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Annotations: map[string]string{"kube-vip.io/loadbalancerIPs": address}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}
	created, err := e.Kube.CoreV1().Services(namespace).Create(e.Ctx, svc, metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = e.Kube.CoreV1().Services(namespace).Delete(e.Ctx, name, metav1.DeleteOptions{}) })
	return created
}

// SetServiceVIPHost plays kube-vip taking a Service's address on node.
func (e *Env) SetServiceVIPHost(namespace, name, node string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{equinixv1.AnnotationVIPHost: node}}})
	if err != nil {
		return err
	}
	_, err = e.Kube.CoreV1().Services(namespace).Patch(e.Ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// DeleteElasticIPPools deletes every ElasticIPPool and waits for them to
// go, which takes a running controller (their ElasticIPs, IPPools and
// blocks go first).
func (e *Env) DeleteElasticIPPools() {
	pools := e.Client.EquinixV1().ElasticIPPools()
	_ = pools.DeleteCollection(e.Ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	e.Eventually(func() bool {
		list, err := pools.List(e.Ctx, metav1.ListOptions{})
		return (err == nil && len(list.Items) == 0) || apierrors.IsNotFound(err)
	}, time.Minute, "ElasticIPPools remain")
}
