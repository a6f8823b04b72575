package elasticip

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	lbv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/loadbalancer.harvesterhci.io/v1beta1"
)

func TestServiceAddresses(t *testing.T) {
	lb := func(mod func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		mod(s)
		return s
	}
	addrs := func(ss ...string) []netip.Addr {
		var out []netip.Addr
		for _, s := range ss {
			out = append(out, netip.MustParseAddr(s))
		}
		return out
	}
	cases := []struct {
		name string
		svc  *corev1.Service
		want []netip.Addr
	}{
		{"no Service", nil, nil},
		{"kube-vip's annotation first, every address of it", lb(func(s *corev1.Service) {
			s.Annotations[annotationLoadBalancerIPs] = "147.75.1.2, 147.75.1.3,2604:1380::1"
			s.Spec.LoadBalancerIP = "147.75.1.9"
		}), addrs("147.75.1.2", "147.75.1.3")},
		{"else the status", lb(func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "147.75.1.4"}, {Hostname: "x.example"}}
			s.Spec.LoadBalancerIP = "147.75.1.9"
		}), addrs("147.75.1.4")},
		{"else spec.loadBalancerIP", lb(func(s *corev1.Service) { s.Spec.LoadBalancerIP = "147.75.1.9" }), addrs("147.75.1.9")},
		{"not a LoadBalancer", lb(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Annotations[annotationLoadBalancerIPs] = "147.75.1.2"
		}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, serviceAddresses(tc.svc)) })
	}
}

func TestIPPoolSpec(t *testing.T) {
	pool := &equinixv1.ElasticIPPool{ObjectMeta: metav1.ObjectMeta{Name: "guest-lb"}, Spec: equinixv1.ElasticIPPoolSpec{
		Selector: &equinixv1.ElasticIPPoolSelector{Priority: 10, Network: "default/vlan1", Scope: []equinixv1.ElasticIPPoolScope{{Namespace: "tenant-a"}}}}}
	assert.Equal(t, lbv1beta1.IPPoolSpec{
		Description: "Equinix Metal Elastic IPs of ElasticIPPool guest-lb (harvester-equinix-addon)",
		Ranges:      []lbv1beta1.Range{{Subnet: "147.75.1.0/29", RangeStart: "147.75.1.0", RangeEnd: "147.75.1.7"}},
		Selector:    lbv1beta1.Selector{Priority: 10, Network: "default/vlan1", Scope: []lbv1beta1.Tuple{{Namespace: "tenant-a"}}},
	}, ipPoolSpec(pool, netip.MustParsePrefix("147.75.1.0/29")))
	one := ipPoolSpec(&equinixv1.ElasticIPPool{}, netip.MustParsePrefix("147.75.1.5/32"))
	assert.Equal(t, []lbv1beta1.Range{{Subnet: "147.75.1.5/32", RangeStart: "147.75.1.5", RangeEnd: "147.75.1.5"}}, one.Ranges)
	assert.Equal(t, "guest-lb-147-75-1-5", serviceElasticIPName("guest-lb", netip.MustParseAddr("147.75.1.5")))
}
