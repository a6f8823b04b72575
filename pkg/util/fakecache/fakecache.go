// Package fakecache is an in-memory stand-in for wrangler caches in unit tests
// of pure controller logic. Integration tests use the real caches.
package fakecache

import (
	"github.com/rancher/wrangler/v3/pkg/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cache holds objects by namespace/name.
type Cache[T runtime.Object] struct {
	resource string
	objs     map[string]T
	indexers map[string]generic.Indexer[T]
}

// New returns a namespaced cache of the given objects.
func New[T runtime.Object](resource string, objs ...T) *Cache[T] {
	c := &Cache[T]{resource: resource, objs: map[string]T{}, indexers: map[string]generic.Indexer[T]{}}
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		c.objs[m.GetNamespace()+"/"+m.GetName()] = o
	}
	return c
}

// Get returns a NotFound error like the real cache.
func (c *Cache[T]) Get(namespace, name string) (T, error) {
	o, ok := c.objs[namespace+"/"+name]
	if !ok {
		var zero T
		return zero, apierrors.NewNotFound(schema.GroupResource{Resource: c.resource}, name)
	}
	return o, nil
}

// List returns the objects of a namespace ("" for all) matching selector.
func (c *Cache[T]) List(namespace string, selector labels.Selector) ([]T, error) {
	var out []T
	for _, o := range c.objs {
		m, _ := meta.Accessor(o)
		if namespace != "" && m.GetNamespace() != namespace {
			continue
		}
		if selector != nil && !selector.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// AddIndexer registers an index.
func (c *Cache[T]) AddIndexer(name string, indexer generic.Indexer[T]) { c.indexers[name] = indexer }

// GetByIndex evaluates the index over every object.
func (c *Cache[T]) GetByIndex(name, key string) ([]T, error) {
	var out []T
	for _, o := range c.objs {
		keys, err := c.indexers[name](o)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if k == key {
				out = append(out, o)
				break
			}
		}
	}
	return out, nil
}

// NonNamespaced adapts a Cache to wrangler's cluster-scoped cache interface.
type NonNamespaced[T runtime.Object] struct{ *Cache[T] }

// Get by name.
func (c NonNamespaced[T]) Get(name string) (T, error) { return c.Cache.Get("", name) }

// List by selector.
func (c NonNamespaced[T]) List(selector labels.Selector) ([]T, error) {
	return c.Cache.List("", selector)
}
