package elasticip

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// target is the node kube-vip names; nil when there is none to follow.
type target struct {
	node *corev1.Node
}

// target reads, from the caches, the node kube-vip names on the followed
// Service, and reports on its health. Without one the address is left
// where it is.
func (r *run) target() target {
	ref := serviceOf(r.Obj)
	name := ref.Namespace + "/" + ref.Name
	r.Obj.Status.Service = name
	none := func(reason, msg string) target {
		r.Obj.Status.NodeName = ""
		r.SetCondition(equinixv1.ElasticIPHostMatched, metav1.ConditionFalse, reason, msg)
		conditions.Remove(&r.Obj.Status.Conditions, equinixv1.ElasticIPHostHealthy)
		return target{}
	}
	svc, err := r.h.services.Get(ref.Namespace, ref.Name)
	if err != nil {
		// The cache answers from memory: anything but a Service is "not there".
		return none(equinixv1.ReasonServiceNotFound, fmt.Sprintf(
			"Service %s does not exist; for the cluster VIP Harvester creates it from ConfigMap harvester-system/vip", name))
	}
	host := svc.Annotations[equinixv1.AnnotationVIPHost]
	if host == "" {
		return none(equinixv1.ReasonNoVIPHost, fmt.Sprintf(
			"Service %s has no annotation %s: kube-vip writes it in ARP mode once a node holds the address (in BGP mode every node announces the address and there is nothing to follow)",
			name, equinixv1.AnnotationVIPHost))
	}
	r.Obj.Status.NodeName = host
	node, err := r.h.nodes.Get(host)
	if apierrors.IsNotFound(err) || node == nil {
		return none(equinixv1.ReasonHostNotFound, fmt.Sprintf("kube-vip names node %s on Service %s, but there is no such node", host, name))
	}
	if err != nil {
		return none(equinixv1.ReasonHostNotFound, fmt.Sprintf("reading node %s: %v", host, err))
	}
	r.health(node)
	return target{node: node}
}

// health reports a node kube-vip keeps naming although it is in
// maintenance, cordoned, or not Ready for longer than kube-vip needs to
// move. The address stays with it: kube-vip answers there, and an address
// moved anywhere else would answer nowhere.
func (r *run) health(node *corev1.Node) {
	const follow = "the Elastic IP stays with it, because that is where kube-vip answers for the address (the addon follows kube-vip and does not fight it); kube-vip moves the address when its leader election lease passes to another node, for instance when its pod on this node stops"
	switch {
	case inMaintenance(node):
		r.SetCondition(equinixv1.ElasticIPHostHealthy, metav1.ConditionFalse, equinixv1.ReasonHostInMaintenance,
			fmt.Sprintf("kube-vip still names node %s, which is in maintenance mode: %s", node.Name, follow))
		return
	case harvester.IsCordoned(node):
		r.SetCondition(equinixv1.ElasticIPHostHealthy, metav1.ConditionFalse, equinixv1.ReasonHostCordoned,
			fmt.Sprintf("kube-vip still names node %s, which is cordoned: %s", node.Name, follow))
		return
	}
	since, unhealthy := harvester.UnhealthySince(node, r.now)
	if unhealthy {
		if due := since.Add(r.h.settings.NotReadyGrace); r.now.Before(due) {
			r.Requeue(due.Sub(r.now) + 100*time.Millisecond)
		} else {
			r.SetCondition(equinixv1.ElasticIPHostHealthy, metav1.ConditionFalse, equinixv1.ReasonHostNotReady,
				fmt.Sprintf("kube-vip still names node %s, which has not been Ready since %s: %s",
					node.Name, since.UTC().Format(time.RFC3339), follow))
			return
		}
	}
	if !conditions.IsTrue(r.Obj.Status.Conditions, equinixv1.ElasticIPHostHealthy) {
		r.SetCondition(equinixv1.ElasticIPHostHealthy, metav1.ConditionTrue, equinixv1.ReasonHostHealthy,
			fmt.Sprintf("node %s, which kube-vip names, is Ready and schedulable", node.Name))
	}
}

func inMaintenance(node *corev1.Node) bool {
	if harvester.MaintenanceUnderWay(node) {
		return true
	}
	for _, c := range node.Status.Conditions {
		if c.Type == harvester.NodeConditionMaintenanceMode && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
