package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// trimCaches keeps the field managers' records (metadata.managedFields) out
// of every cache. No controller reads them, and they are a large share of a
// Node or an Instance that has been written to by several clients: at 2,000
// servers, memory and every deep copy of a cached object. An update that
// carries no managedFields leaves the stored ones as they are.
func trimCaches(deps *common.Deps) error {
	informers := map[string]toolscache.SharedIndexInformer{"Node": deps.Nodes.Informer()}
	if deps.Cfg.Mode == config.ModeHardware {
		informers["Inventory"] = deps.Inventories.Informer()
		if deps.Cfg.OwnedPools {
			for kind, informer := range map[string]toolscache.SharedIndexInformer{
				"InstancePool": deps.Pools.Informer(), "Instance": deps.Instances.Informer(),
				"Secret": deps.Secrets.Informer(), "ConfigMap": deps.ConfigMaps.Informer(), "Setting": deps.Settings.Informer(),
			} {
				informers[kind] = informer
			}
		}
	} else {
		for kind, informer := range map[string]toolscache.SharedIndexInformer{
			"InstancePool": deps.Pools.Informer(), "Instance": deps.Instances.Informer(),
			"ElasticIP": deps.ElasticIPs.Informer(), "ElasticIPPool": deps.ElasticIPPools.Informer(),
			"Service": deps.Services.Informer(),
			"Secret":  deps.Secrets.Informer(), "ConfigMap": deps.ConfigMaps.Informer(),
			"Setting": deps.Settings.Informer(),
		} {
			informers[kind] = informer
		}
	}
	for kind, informer := range informers {
		if err := informer.SetTransform(dropManagedFields); err != nil {
			return fmt.Errorf("trimming the %s cache: %w", kind, err)
		}
	}
	return nil
}

// dropManagedFields is the caches' transform; a deletion tombstone passes
// as it is.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
