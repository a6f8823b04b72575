package apivalidation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

var poolGVR = schema.GroupVersionResource{Group: "equinix.harvesterhci.io", Version: "v1", Resource: "instancepools"}

// createRaw sends YAML as written, for values the Go types cannot even hold.
func createRaw(ctx context.Context, t *testing.T, doc string) error {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
	dyn, err := dynamic.NewForConfig(shared.Require(t).RESTConfig)
	require.NoError(t, err)
	created, err := dyn.Resource(poolGVR).Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		_ = dyn.Resource(poolGVR).Delete(ctx, created.GetName(), metav1.DeleteOptions{})
	}
	return err
}

// ensureNamespace creates a namespace unless it exists.
func ensureNamespace(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	k8s, err := kubernetes.NewForConfig(shared.Require(t).RESTConfig)
	require.NoError(t, err)
	_, err = k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// fromUnstructured converts strictly: a field the Go type lacks is an error.
func fromUnstructured(u *unstructured.Unstructured, out interface{}) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true)
}
