package elasticip

import (
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// serviceOf is the Service an ElasticIP follows.
func serviceOf(eip *equinixv1.ElasticIP) equinixv1.ServiceReference {
	if s := eip.Spec.Service; s != nil && s.Name != "" {
		return *s
	}
	return equinixv1.ServiceReference{Namespace: equinixv1.VIPServiceNamespace, Name: equinixv1.VIPServiceName}
}

// keysOf lists the ElasticIPs for which keep is true.
func (h *Handler) keysOf(keep func(*equinixv1.ElasticIP) bool) ([]relatedresource.Key, error) {
	eips, err := h.eips.Cache().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []relatedresource.Key
	for _, e := range eips {
		if keep(e) {
			keys = append(keys, relatedresource.Key{Name: e.Name})
		}
	}
	return keys, nil
}

// followersOfService: the ElasticIPs that follow a Service's vipHost.
func (h *Handler) followersOfService(namespace, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	return h.keysOf(func(e *equinixv1.ElasticIP) bool {
		s := serviceOf(e)
		return s.Namespace == namespace && s.Name == name
	})
}

// followersOfNode: the ElasticIPs whose vipHost is the node, so that its
// health, addresses and device annotation are seen at once.
func (h *Handler) followersOfNode(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	return h.keysOf(func(e *equinixv1.ElasticIP) bool { return e.Status.NodeName == name })
}

// followersOfInstance: an Instance is named like its Node; its device ID
// appearing (or going) changes the node's match.
func (h *Handler) followersOfInstance(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	return h.keysOf(func(e *equinixv1.ElasticIP) bool { return e.Status.NodeName == name })
}

// credentialsSecret tells whether a Secret is the credentials of an
// ElasticIP (the default one is always a candidate).
func (h *Handler) credentialsSecret(namespace, name string) bool {
	if namespace != h.settings.Namespace {
		return false
	}
	keys, err := h.keysOf(func(e *equinixv1.ElasticIP) bool {
		return h.credentials.RefFor(e.Spec.CredentialsSecret).Name == name
	})
	// A failed cache list costs a needless re-run at worst.
	return err != nil || len(keys) > 0
}

func (h *Handler) all(string, string, runtime.Object) ([]relatedresource.Key, error) {
	return h.keysOf(func(*equinixv1.ElasticIP) bool { return true })
}

// sameAddress re-runs the other ElasticIPs of an address, so that the one a
// conflict held back takes over when the other goes.
func (h *Handler) sameAddress(_, name string, obj runtime.Object) ([]relatedresource.Key, error) {
	changed, ok := obj.(*equinixv1.ElasticIP)
	return h.keysOf(func(e *equinixv1.ElasticIP) bool {
		if e.Name == name {
			return false
		}
		// A deleted one arrives without its body: re-run every conflicted one.
		if !ok || changed == nil {
			return e.Status.Status == equinixv1.ElasticIPPhaseError
		}
		return e.Spec.Address == changed.Spec.Address
	})
}
