package common

import (
	"context"

	"github.com/rancher/wrangler/v3/pkg/generic"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// Pools and Instances are run by the install of their provider: Equinix
// Metal ones by --mode equinix, servers people own by --mode seeder (the
// install that holds the BMC sessions). Each install registers its handlers
// through these filters, so that it never acts on, nor puts its finalizer
// on, the other provider's objects.

// MetalPool reports whether the pool is of Equinix Metal devices.
func MetalPool(p *equinixv1.InstancePool) bool { return !p.Spec.Owned() }

// OwnedPool reports whether the pool is of servers people own.
func OwnedPool(p *equinixv1.InstancePool) bool { return p.Spec.Owned() }

// MetalInstance reports whether the Instance is an Equinix Metal device.
func MetalInstance(i *equinixv1.Instance) bool { return !i.Spec.Owned() }

// OwnedInstance reports whether the Instance is a server people own.
func OwnedInstance(i *equinixv1.Instance) bool { return i.Spec.Owned() }

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
