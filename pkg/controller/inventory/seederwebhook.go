package inventory

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Leftovers of Seeder the metric counts, by kind.
const (
	leftoverWebhook   = "webhook"
	leftoverFinalizer = "finalizer"
	leftoverStatus    = "status"
	leftoverRequest   = "powerRequest"
	leftoverSchema    = "schema"
)

// seederWebhook removes Seeder's admission webhook once nothing serves it.
// Seeder's webhook server applies it (failurePolicy Fail, on every create
// and update of an Inventory) with its CA Secret as object-set owner, so
// neither Helm nor the garbage collector removes it with Seeder's Addon:
// left alone, every Save of Out-of-Band Access and every power request of
// Harvester's node actions fails. It is removed only while Seeder does not
// run (the guard's Lease), only when it is Seeder's (its name, its owner
// annotations, Seeder's Service), only when no endpoint serves that
// Service's webhook port, and only the version read (preconditions): a
// Seeder started in between keeps its own. Seeder applies it again when it
// comes back, from the CA Secret, which stays.
type seederWebhook struct {
	k8s      kubernetes.Interface
	recorder record.EventRecorder
}

// takeOver removes the webhook configuration when it is Seeder's and
// orphaned; it says why not otherwise (a debug line: the next check tells).
func (w *seederWebhook) takeOver(ctx context.Context) error {
	configs := w.k8s.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cfg, err := configs.Get(ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", seederv1alpha1.SeederWebhookName, err)
	}
	if why := notSeedersWebhook(cfg); why != "" {
		logrus.Debugf("ValidatingWebhookConfiguration %s left alone: %s", cfg.Name, why)
		return nil
	}
	served, err := w.served(ctx, cfg)
	if err != nil {
		return err
	}
	if served != "" {
		logrus.Debugf("ValidatingWebhookConfiguration %s left alone: %s", cfg.Name, served)
		return nil
	}
	uid, rv := cfg.UID, cfg.ResourceVersion
	err = configs.Delete(ctx, cfg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or changed since read: the next check reads it again.
		return nil
	case err != nil:
		return fmt.Errorf("removing Seeder's ValidatingWebhookConfiguration %s: %w", cfg.Name, err)
	}
	metrics.SeederLeftoversTakenOver.WithLabelValues(leftoverWebhook).Inc()
	msg := fmt.Sprintf("removed Seeder's admission webhook %s: Seeder no longer runs and no endpoint serves Service %s/%s, "+
		"so every Inventory create or update (the UI's Out-of-Band Access Save, Harvester's power actions) failed on it; "+
		"Seeder applies it again when it comes back", cfg.Name, seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederWebhookService)
	logrus.Info(msg)
	ref := cfg.DeepCopy()
	ref.APIVersion, ref.Kind = admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingWebhookConfiguration"
	w.recorder.Event(ref, corev1.EventTypeNormal, equinixv1.ReasonSeederWebhookRemoved, msg)
	return nil
}

// notSeedersWebhook says why cfg is not the configuration Seeder's webhook
// server applies ("" when it is): owned through the object set by its CA
// Secret, every webhook calling Seeder's Service.
func notSeedersWebhook(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) string {
	a := cfg.Annotations
	if a[seederv1alpha1.ObjectSetOwnerGVKAnnotation] != seederv1alpha1.SecretOwnerGVK ||
		a[seederv1alpha1.ObjectSetOwnerNameAnnotation] != seederv1alpha1.SeederWebhookCASecret ||
		a[seederv1alpha1.ObjectSetOwnerNamespaceAnnotation] != seederv1alpha1.SeederAddonNamespace {
		return fmt.Sprintf("its object-set owner is not Secret %s/%s", seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederWebhookCASecret)
	}
	if len(cfg.Webhooks) == 0 {
		return "it has no webhook"
	}
	for _, hook := range cfg.Webhooks {
		svc := hook.ClientConfig.Service
		if svc == nil || svc.Namespace != seederv1alpha1.SeederAddonNamespace || svc.Name != seederv1alpha1.SeederWebhookService {
			return fmt.Sprintf("webhook %s does not call Service %s/%s", hook.Name, seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederWebhookService)
		}
	}
	return ""
}

// served says which endpoint serves the webhooks' Service port ("" when
// none: the Service is gone, or nothing ready backs that port). The
// addon's own pods share Seeder's selector labels when installed as the
// harvester-seeder Addon, but have no port named as Seeder's webhook port:
// they never back it.
func (w *seederWebhook) served(ctx context.Context, cfg *admissionregistrationv1.ValidatingWebhookConfiguration) (string, error) {
	slices, err := w.k8s.DiscoveryV1().EndpointSlices(seederv1alpha1.SeederAddonNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + seederv1alpha1.SeederWebhookService,
	})
	if err != nil {
		return "", fmt.Errorf("reading the endpoints of Service %s/%s: %w", seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederWebhookService, err)
	}
	svc := cfg.Webhooks[0].ClientConfig.Service
	for i := range slices.Items {
		if at := readyEndpoint(&slices.Items[i], svc); at != "" {
			return fmt.Sprintf("%s serves Service %s/%s", at, svc.Namespace, svc.Name), nil
		}
	}
	return "", nil
}

// readyEndpoint is a ready address of the slice behind the webhook's
// Service port ("" when none). The slice names its ports by the Service's
// port names, not numbers; a slice behind no port of the webhook's
// number, or with no ports at all, serves the webhook only if it has a
// port of the service reference's number.
func readyEndpoint(slice *discoveryv1.EndpointSlice, svc *admissionregistrationv1.ServiceReference) string {
	port := int32(443)
	if svc.Port != nil {
		port = *svc.Port
	}
	backs := false
	for _, p := range slice.Ports {
		if p.Name != nil && *p.Name == "webhook" || p.Port != nil && *p.Port == port {
			backs = true
		}
	}
	if !backs {
		return ""
	}
	for _, ep := range slice.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		if len(ep.Addresses) > 0 {
			return ep.Addresses[0]
		}
	}
	return ""
}
