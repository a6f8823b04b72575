package common

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestDropManagedFields(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	out, err := DropManagedFields(node)
	assert.NoError(t, err)
	assert.Nil(t, out.(*corev1.Node).ManagedFields)
	assert.Equal(t, "b", out.(*corev1.Node).Labels["a"])

	tomb := toolscache.DeletedFinalStateUnknown{Key: "n", Obj: node}
	out, err = DropManagedFields(tomb)
	assert.NoError(t, err)
	assert.Equal(t, tomb, out)
}
