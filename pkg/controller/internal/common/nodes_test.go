package common

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func nodeAt(rv string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv, Labels: labels}}
}

func TestNodeWritesReadTheirOwnWrites(t *testing.T) {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	cached := nodeAt("5", nil)
	require.NoError(t, store.Add(cached))
	w := NewNodeWrites(store)

	t.Run("nothing written: the cache's copy", func(t *testing.T) {
		assert.Same(t, cached, w.Latest(cached))
	})

	patched := nodeAt("7", map[string]string{"a": "b"})
	w.Wrote(patched)
	t.Run("a write the cache has not seen yet stands in for it", func(t *testing.T) {
		assert.Same(t, patched, w.Latest(cached))
	})

	later := nodeAt("9", map[string]string{"a": "b", "c": "d"})
	require.NoError(t, store.Update(later))
	t.Run("a newer cached copy wins over the write", func(t *testing.T) {
		assert.Same(t, later, w.Latest(later))
	})

	t.Run("a Node gone from the cache is not brought back", func(t *testing.T) {
		require.NoError(t, store.Delete(later))
		w.Wrote(nodeAt("11", nil))
		gone := nodeAt("9", nil)
		assert.Same(t, gone, w.Latest(gone), "the caller's copy, which the caller found")
	})

	t.Run("nil in, nil out", func(t *testing.T) {
		assert.Nil(t, w.Latest(nil))
		var none *NodeWrites
		assert.Same(t, cached, none.Latest(cached))
	})
}
