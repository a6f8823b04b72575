package elasticip

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// vipRecheck paces the search for a VIP that is in no project the addon
// has credentials for: one reservation list per credentials Secret.
const vipRecheck = 10 * time.Minute

// EnsureVIPElasticIP creates the cluster VIP's ElasticIP, named
// cluster-vip, when the VIP of ConfigMap vip lies in a reservation of a
// project the addon has credentials for: the default Secret's first, then
// every labelled credentials Secret's, by name. It is made with the Keep
// deletion policy, and replaced when the VIP changes. An ElasticIP a person
// made for the VIP's address, or one named cluster-vip that the addon did
// not make, is left alone.
func (h *Handler) EnsureVIPElasticIP(_ string, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if cm == nil || cm.Namespace != h.settings.Namespace || cm.Name != harvester.VIPConfigMapName || cm.DeletionTimestamp != nil {
		return cm, nil
	}
	vip, err := netip.ParseAddr(strings.TrimSpace(cm.Data[harvester.VIPConfigMapIPKey]))
	if err != nil || !vip.Is4() {
		// The join information reports a missing or bad VIP.
		return cm, nil
	}
	done, err := h.vipHandled(vip.String())
	if err != nil || done {
		return cm, err
	}
	ref, res, err := h.findVIPReservation(vip.String())
	if err != nil {
		return cm, err
	}
	if res == nil {
		logrus.Debugf("cluster VIP %s is in no IP reservation of the projects the addon has credentials for; looking again in %s", vip, vipRecheck)
		h.configMapCtl.EnqueueAfter(cm.Namespace, cm.Name, vipRecheck)
		return cm, nil
	}
	eip := &equinixv1.ElasticIP{
		ObjectMeta: metav1.ObjectMeta{Name: equinixv1.VIPElasticIPName, Labels: map[string]string{equinixv1.LabelElasticIPFor: equinixv1.ElasticIPForVIP}},
		Spec:       equinixv1.ElasticIPSpec{Address: vip.String(), CredentialsSecret: ref, DeletionPolicy: equinixv1.ElasticIPKeep},
	}
	created, err := h.eips.Create(eip)
	if apierrors.IsAlreadyExists(err) {
		return cm, nil
	}
	if err != nil {
		return cm, fmt.Errorf("creating the ElasticIP of the cluster VIP %s: %w", vip, err)
	}
	common.Eventf(h.recorder, created, equinixv1.ReasonElasticIPCreated,
		"the cluster VIP %s lies in IP reservation %s of project %s (Secret %s): its assignment now follows kube-vip's %s on Service %s/%s",
		vip, res.ID, h.projectOf(ref), h.credentials.RefFor(ref), equinixv1.AnnotationVIPHost, equinixv1.VIPServiceNamespace, equinixv1.VIPServiceName)
	return cm, nil
}

// vipHandled tells whether an ElasticIP already covers the VIP, replacing
// the addon's own one when the VIP changed.
func (h *Handler) vipHandled(vip string) (bool, error) {
	all, err := h.eips.Cache().List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, e := range all {
		if e.Spec.Address == vip && e.DeletionTimestamp == nil {
			return true, nil
		}
	}
	own, err := h.eips.Cache().Get(equinixv1.VIPElasticIPName)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case own.Labels[equinixv1.LabelElasticIPFor] != equinixv1.ElasticIPForVIP:
		return true, nil
	case own.DeletionTimestamp != nil:
		// The create waits until it is gone; its removal brings us back.
		return true, nil
	}
	if err := h.eips.Delete(own.Name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("replacing the ElasticIP of the old cluster VIP %s: %w", own.Spec.Address, err)
	}
	common.Eventf(h.recorder, own, equinixv1.ReasonElasticIPReplaced, "the cluster VIP is now %s: the ElasticIP of %s is deleted (its assignment is kept) and one of the new VIP made", vip, own.Spec.Address)
	return true, nil
}

// findVIPReservation looks for the VIP in the reservations of each project
// the addon has credentials for. A Secret whose credentials are refused is
// skipped; other failures are retried.
func (h *Handler) findVIPReservation(vip string) (*equinixv1.SecretReference, *metal.IPReservation, error) {
	refs := []*equinixv1.SecretReference{nil}
	secrets, err := h.secrets.List(h.settings.Namespace, labels.SelectorFromSet(labels.Set{equinixv1.LabelSecret: equinixv1.SecretCredentials}))
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(secrets, func(a, b int) bool { return secrets[a].Name < secrets[b].Name })
	for _, s := range secrets {
		refs = append(refs, &equinixv1.SecretReference{Name: s.Name})
	}
	seen := map[string]bool{}
	for _, ref := range refs {
		creds, err := h.credentials.For(ref)
		if err != nil || seen[creds.ProjectID] {
			continue
		}
		seen[creds.ProjectID] = true
		c, err := h.metal.Client(creds)
		if err != nil {
			return nil, nil, fmt.Errorf("building the Metal client: %w", err)
		}
		list, err := c.ListIPReservations(h.ctx, metal.ListIPReservationsOptions{Types: elasticTypes})
		if metal.IsAuth(err) {
			logrus.Debugf("looking for the cluster VIP: Equinix Metal refused the credentials of Secret %s", h.credentials.RefFor(ref))
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("looking for the cluster VIP in project %s: %w", creds.ProjectID, err)
		}
		for i := range list {
			if !list[i].Management && list[i].Contains(vip) {
				if ref != nil && ref.Name == h.credentials.RefFor(nil).Name {
					ref = nil
				}
				return ref, &list[i], nil
			}
		}
	}
	return nil, nil, nil
}

func (h *Handler) projectOf(ref *equinixv1.SecretReference) string {
	creds, err := h.credentials.For(ref)
	if err != nil {
		return "?"
	}
	return creds.ProjectID
}

// vipConfigMap brings ConfigMap vip back when the addon's own ElasticIP of
// the VIP goes, so that it is made again (or replaced).
func (h *Handler) vipConfigMap(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	if name != equinixv1.VIPElasticIPName {
		return nil, nil
	}
	return []relatedresource.Key{{Namespace: h.settings.Namespace, Name: harvester.VIPConfigMapName}}, nil
}
