package apivalidation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
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
