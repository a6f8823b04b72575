package inventory

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// seedersWebhook is the configuration Seeder's webhook server applies.
func seedersWebhook() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: seederv1alpha1.SeederWebhookName, Annotations: map[string]string{
			seederv1alpha1.ObjectSetOwnerGVKAnnotation:       seederv1alpha1.SecretOwnerGVK,
			seederv1alpha1.ObjectSetOwnerNameAnnotation:      seederv1alpha1.SeederWebhookCASecret,
			seederv1alpha1.ObjectSetOwnerNamespaceAnnotation: seederv1alpha1.SeederAddonNamespace,
		}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validator.harvester-system.harvester-seeder",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: seederv1alpha1.SeederAddonNamespace, Name: seederv1alpha1.SeederWebhookService, Port: ptr.To[int32](443)}}}},
	}
}

func slice(ready bool, ports ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.SeederAddonNamespace, Name: "harvester-seeder-abcde",
		Labels: map[string]string{discoveryv1.LabelServiceName: seederv1alpha1.SeederWebhookService}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.52.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}}}
	for _, p := range ports {
		port := int32(8080)
		if p == "webhook" {
			port = 443
		}
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(p), Port: ptr.To(port)})
	}
	return s
}

// Seeder's webhook is removed only when it is Seeder's and nothing ready
// backs its Service's webhook port; the addon's own pods, which share
// Seeder's selector labels but have no webhook port, back nothing.
func TestSeederWebhookTakeOver(t *testing.T) {
	foreign := seedersWebhook()
	foreign.Annotations = nil
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		removed bool
	}{
		{"Seeder's, its Service gone", []runtime.Object{seedersWebhook()}, true},
		{"Seeder's, served by a ready pod", []runtime.Object{seedersWebhook(), slice(true, "http", "webhook")}, false},
		{"Seeder's, its pod not ready", []runtime.Object{seedersWebhook(), slice(false, "http", "webhook")}, true},
		{"Seeder's, the Service selects only the addon's pods", []runtime.Object{seedersWebhook(), slice(true, "http")}, true},
		{"not Seeder's object set", []runtime.Object{foreign}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k8s := fake.NewClientset(tc.objs...)
			events := record.NewFakeRecorder(5)
			w := &seederWebhook{k8s: k8s, recorder: events}
			require.NoError(t, w.takeOver(context.Background()))
			_, err := k8s.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
			assert.Equal(t, tc.removed, apierrors.IsNotFound(err))
			if tc.removed {
				assert.Contains(t, <-events.Events, "Normal SeederWebhookRemoved removed Seeder's admission webhook harvester-seeder")
			}
		})
	}
}
