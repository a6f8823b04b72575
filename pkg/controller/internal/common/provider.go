package common

import (
	"context"

	"github.com/rancher/wrangler/v3/pkg/generic"
	"k8s.io/apimachinery/pkg/runtime"
)

// Pools and Instances are run by the install of their provider: Equinix
// Metal ones by --mode equinix, servers people own by --mode seeder (the
// install that holds the BMC sessions). Each install registers its handlers
// through these filters, with its provider's Handles, so that it never acts
// on, nor puts its finalizer on, the other provider's objects.

// registrar is the part of a wrangler controller the filters register on.
type registrar[T runtime.Object] interface {
	OnChange(ctx context.Context, name string, sync generic.ObjectHandler[T])
	AddGenericHandler(ctx context.Context, name string, handler generic.Handler)
	Updater() generic.Updater
}

// OnChangeWhere registers sync for the objects keep accepts; a deleted
// object (nil) reaches sync too, as it does without the filter.
func OnChangeWhere[T interface {
	generic.RuntimeMetaObject
	comparable
}](ctx context.Context, c registrar[T], name string, keep func(T) bool, sync generic.ObjectHandler[T]) {
	c.OnChange(ctx, name, func(key string, obj T) (T, error) {
		var none T
		if obj != none && !keep(obj) {
			return obj, nil
		}
		return sync(key, obj)
	})
}

// OnRemoveWhere is wrangler's OnRemove for the objects keep accepts only:
// its finalizer (named after the handler) is added to those alone, so an
// install never holds up, or cleans up, the deletion of another's object.
func OnRemoveWhere[T interface {
	generic.RuntimeMetaObject
	comparable
}](ctx context.Context, c registrar[T], name string, keep func(T) bool, sync generic.ObjectHandler[T]) {
	remove := generic.NewRemoveHandler(name, c.Updater(), generic.FromObjectHandlerToHandler(sync))
	c.AddGenericHandler(ctx, name, func(key string, obj runtime.Object) (runtime.Object, error) {
		if t, ok := obj.(T); ok && !keep(t) {
			return obj, nil
		}
		return remove(key, obj)
	})
}
