package common

import (
	"context"

	"github.com/rancher/wrangler/v3/pkg/schemes"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// NewRecorder records Events through the API server, attributed to the addon.
func NewRecorder(ctx context.Context, k8s kubernetes.Interface) record.EventRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k8s.CoreV1().Events("")})
	b.StartLogging(func(format string, args ...interface{}) {
		logrus.Debugf(format, args...)
	})
	// schemes.All knows the addon's kinds and the core ones (Namespace), which
	// Events must be able to reference.
	return b.NewRecorder(schemes.All, corev1.EventSource{Component: "harvester-equinix-addon"})
}

// Eventf records an Event whose type is the reason's.
func Eventf(recorder record.EventRecorder, obj runtime.Object, reason, messageFmt string, args ...interface{}) {
	recorder.Eventf(obj, equinixv1.EventType(reason), reason, messageFmt, args...)
}
