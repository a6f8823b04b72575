package provision

import (
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// EveryPool is a relatedresource resolver that re-runs every pool: there
// are few, and a change of what a provider's servers need (a credentials
// Secret, a free server) can concern any of them.
func EveryPool(pools equinixcontrollers.InstancePoolCache) relatedresource.Resolver {
	return func(_, _ string, _ runtime.Object) ([]relatedresource.Key, error) {
		list, err := pools.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		keys := make([]relatedresource.Key, 0, len(list))
		for _, p := range list {
			keys = append(keys, relatedresource.Key{Name: p.Name})
		}
		return keys, nil
	}
}
