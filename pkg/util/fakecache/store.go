package fakecache

import (
	"errors"

	"github.com/rancher/wrangler/v3/pkg/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Store stands in for a namespaced wrangler controller in unit tests: its
// objects live in a Cache, and Get, Create, Update and Delete act on them as
// the apiserver would (NotFound, AlreadyExists, a UID on create). Any other
// method panics on the nil embedded interface, which flags an unexpected
// call.
type Store[T generic.RuntimeMetaObject, TList runtime.Object] struct {
	generic.ControllerInterface[T, TList]
	objs *Cache[T]
}

// NewStore holds objs.
func NewStore[T generic.RuntimeMetaObject, TList runtime.Object](resource string, objs ...T) *Store[T, TList] {
	return &Store[T, TList]{objs: New(resource, objs...)}
}

// Cache returns the store's objects as a cache.
func (s *Store[T, TList]) Cache() generic.CacheInterface[T] { return s.objs }

func (s *Store[T, TList]) copyOf(o T) T { return o.DeepCopyObject().(T) }

func (s *Store[T, TList]) key(o T) string {
	m, _ := meta.Accessor(o)
	return m.GetNamespace() + "/" + m.GetName()
}

// Get returns a copy.
func (s *Store[T, TList]) Get(namespace, name string, _ metav1.GetOptions) (T, error) {
	o, err := s.objs.Get(namespace, name)
	if err != nil {
		return o, err
	}
	return s.copyOf(o), nil
}

// Create stores a copy with a UID.
func (s *Store[T, TList]) Create(o T) (T, error) {
	if _, ok := s.objs.objs[s.key(o)]; ok {
		var zero T
		m, _ := meta.Accessor(o)
		return zero, apierrors.NewAlreadyExists(schema.GroupResource{Resource: s.objs.resource}, m.GetName())
	}
	o = s.copyOf(o)
	m, _ := meta.Accessor(o)
	if m.GetUID() == "" {
		m.SetUID(types.UID(uuid.NewUUID()))
	}
	s.objs.objs[s.key(o)] = o
	return s.copyOf(o), nil
}

// Update replaces a stored object.
func (s *Store[T, TList]) Update(o T) (T, error) {
	if _, ok := s.objs.objs[s.key(o)]; !ok {
		var zero T
		m, _ := meta.Accessor(o)
		return zero, apierrors.NewNotFound(schema.GroupResource{Resource: s.objs.resource}, m.GetName())
	}
	s.objs.objs[s.key(o)] = s.copyOf(o)
	return s.copyOf(o), nil
}

// Delete removes an object, honouring a UID precondition.
func (s *Store[T, TList]) Delete(namespace, name string, opts *metav1.DeleteOptions) error {
	o, err := s.objs.Get(namespace, name)
	if err != nil {
		return err
	}
	if opts != nil && opts.Preconditions != nil && opts.Preconditions.UID != nil {
		if m, _ := meta.Accessor(o); m.GetUID() != *opts.Preconditions.UID {
			return apierrors.NewConflict(schema.GroupResource{Resource: s.objs.resource}, name, errors.New("UID precondition failed"))
		}
	}
	delete(s.objs.objs, namespace+"/"+name)
	return nil
}
