package elasticip

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// annotationLoadBalancerIPs is where harvester-load-balancer (and Harvester
// for the VIP) writes a Service's addresses for kube-vip.
const annotationLoadBalancerIPs = "kube-vip.io/loadbalancerIPs"

// serviceAddresses are the IPv4 addresses kube-vip serves a LoadBalancer
// Service on, read in kube-vip's order: its annotation, else the addresses
// in the status, else spec.loadBalancerIP.
func serviceAddresses(svc *corev1.Service) []netip.Addr {
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	var raw []string
	switch {
	case svc.Annotations[annotationLoadBalancerIPs] != "":
		raw = strings.Split(svc.Annotations[annotationLoadBalancerIPs], ",")
	case len(svc.Status.LoadBalancer.Ingress) > 0:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			raw = append(raw, in.IP)
		}
	default:
		raw = []string{svc.Spec.LoadBalancerIP}
	}
	var out []netip.Addr
	for _, r := range raw {
		if a, err := netip.ParseAddr(strings.TrimSpace(r)); err == nil && a.Is4() {
			out = append(out, a)
		}
	}
	return out
}

// serviceElasticIPName names the ElasticIP of a pool's address.
func serviceElasticIPName(pool string, addr netip.Addr) string {
	return pool + "-" + strings.ReplaceAll(addr.String(), ".", "-")
}

// wanted is an ElasticIP a Service should have.
type wanted struct {
	pool *equinixv1.ElasticIPPool
	addr netip.Addr
}

// EnsureServiceElasticIPs gives a LoadBalancer Service an ElasticIP for
// each of its addresses that lies in an ElasticIPPool's block, following
// the Service's kube-vip.io/vipHost (the ElasticIP chain then assigns and
// moves it), and deletes the ones it no longer holds, or all of them when
// it goes: their Unassign policy takes the address off its device.
// Addresses in no pool's block are never looked at.
func (h *Handler) EnsureServiceElasticIPs(key string, svc *corev1.Service) (*corev1.Service, error) {
	namespace, name, _ := strings.Cut(key, "/")
	want, err := h.wantedElasticIPs(svc)
	if err != nil {
		return svc, err
	}
	have, err := h.eips.Cache().List(labels.SelectorFromSet(labels.Set{equinixv1.LabelElasticIPFor: equinixv1.ElasticIPForService}))
	if err != nil {
		return svc, err
	}
	for _, e := range have {
		ref := e.Spec.Service
		if ref == nil || ref.Namespace != namespace || ref.Name != name || e.DeletionTimestamp != nil {
			continue
		}
		if _, ok := want[e.Name]; ok {
			delete(want, e.Name)
			continue
		}
		if err := h.eips.Delete(e.Name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return svc, fmt.Errorf("deleting ElasticIP %s of Service %s: %w", e.Name, key, err)
		}
		if pool, err := h.pools.Cache().Get(e.Labels[equinixv1.LabelElasticIPPool]); err == nil {
			common.Eventf(h.recorder, pool, equinixv1.ReasonElasticIPDeleted,
				"Service %s no longer holds %s: ElasticIP %s is deleted, which unassigns it", key, e.Spec.Address, e.Name)
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := h.createServiceElasticIP(n, want[n], namespace, name); err != nil {
			return svc, err
		}
	}
	return svc, nil
}

// wantedElasticIPs are the ElasticIPs the Service's addresses call for, by
// name.
func (h *Handler) wantedElasticIPs(svc *corev1.Service) (map[string]wanted, error) {
	want := map[string]wanted{}
	addrs := serviceAddresses(svc)
	if len(addrs) == 0 || svc.DeletionTimestamp != nil {
		return want, nil
	}
	pools, err := h.pools.Cache().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, p := range pools {
		block, err := netip.ParsePrefix(p.Status.CIDR)
		if err != nil || p.DeletionTimestamp != nil {
			continue
		}
		for _, a := range addrs {
			if block.Contains(a) {
				want[serviceElasticIPName(p.Name, a)] = wanted{pool: p, addr: a}
			}
		}
	}
	return want, nil
}

// createServiceElasticIP makes the ElasticIP of one address. One of that
// name already there follows another Service that holds the same address
// (kube-vip lets Services share one): it is left to it.
func (h *Handler) createServiceElasticIP(name string, w wanted, namespace, service string) error {
	eip := &equinixv1.ElasticIP{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			equinixv1.LabelElasticIPFor: equinixv1.ElasticIPForService, equinixv1.LabelElasticIPPool: w.pool.Name}},
		Spec: equinixv1.ElasticIPSpec{Address: w.addr.String(), Service: &equinixv1.ServiceReference{Namespace: namespace, Name: service},
			CredentialsSecret: w.pool.Spec.CredentialsSecret, DeletionPolicy: equinixv1.ElasticIPUnassign},
	}
	created, err := h.eips.Create(eip)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the ElasticIP of %s for Service %s/%s: %w", w.addr, namespace, service, err)
	}
	common.Eventf(h.recorder, created, equinixv1.ReasonElasticIPCreated,
		"Service %s/%s holds %s of ElasticIPPool %s (block %s): its assignment now follows kube-vip's %s on that Service",
		namespace, service, w.addr, w.pool.Name, w.pool.Status.CIDR, equinixv1.AnnotationVIPHost)
	return nil
}

// servicesOfPool: a pool whose block is known (or changes) brings back the
// LoadBalancer Services holding one of its addresses, and those its
// ElasticIPs name.
func (h *Handler) servicesOfPool(_, name string, obj runtime.Object) ([]relatedresource.Key, error) {
	keys := map[relatedresource.Key]bool{}
	if pool, ok := obj.(*equinixv1.ElasticIPPool); ok && pool != nil {
		if block, err := netip.ParsePrefix(pool.Status.CIDR); err == nil {
			services, err := h.services.List("", labels.Everything())
			if err != nil {
				return nil, err
			}
			for _, s := range services {
				for _, a := range serviceAddresses(s) {
					if block.Contains(a) {
						keys[relatedresource.Key{Namespace: s.Namespace, Name: s.Name}] = true
					}
				}
			}
		}
	}
	eips, err := h.poolElasticIPs(name)
	if err != nil {
		return nil, err
	}
	for _, e := range eips {
		if s := e.Spec.Service; s != nil {
			keys[relatedresource.Key{Namespace: s.Namespace, Name: s.Name}] = true
		}
	}
	out := make([]relatedresource.Key, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	return out, nil
}

// serviceOfElasticIP: a Service's ElasticIP that changes or goes (a person
// deleted it) brings the Service back, so it is made again while the
// Service holds the address.
func (h *Handler) serviceOfElasticIP(_, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	eip, ok := obj.(*equinixv1.ElasticIP)
	if !ok || eip == nil || eip.Labels[equinixv1.LabelElasticIPFor] != equinixv1.ElasticIPForService || eip.Spec.Service == nil {
		return nil, nil
	}
	return []relatedresource.Key{{Namespace: eip.Spec.Service.Namespace, Name: eip.Spec.Service.Name}}, nil
}

// poolOfElasticIP: a pool being deleted waits for its ElasticIPs to go.
func (h *Handler) poolOfElasticIP(_, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	eip, ok := obj.(*equinixv1.ElasticIP)
	if !ok || eip == nil || eip.Labels[equinixv1.LabelElasticIPPool] == "" {
		return nil, nil
	}
	return []relatedresource.Key{{Name: eip.Labels[equinixv1.LabelElasticIPPool]}}, nil
}
