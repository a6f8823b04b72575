package vlans

import (
	"context"
	"fmt"
	"strings"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Ensure maps the VXLAN numbers of metro's VLANs to their IDs, creating (and
// tagging as the addon's) each of vxlans that does not exist yet. The map
// also covers attached, the IDs of the VLANs a device's ports carry now,
// since device reads name a port's VLANs by ID only.
func Ensure(ctx context.Context, client metal.Client, cache *IDCache, clusterID, metro string, vxlans []int, attached []string) (map[int]string, []int, error) {
	if len(vxlans) == 0 && len(attached) == 0 {
		return map[int]string{}, nil, nil
	}
	if ids, ok := cache.lookup(client.ProjectID(), metro, vxlans, attached); ok {
		return ids, nil, nil
	}
	defer cache.lockMetro(client.ProjectID(), metro)()
	// Another server may have listed (and created) while this one waited.
	if ids, ok := cache.lookup(client.ProjectID(), metro, vxlans, attached); ok {
		return ids, nil, nil
	}
	ids, err := listIDs(ctx, client, metro)
	if err != nil {
		return nil, nil, err
	}
	var created []int
	for _, vx := range vxlans {
		if _, ok := ids[vx]; ok {
			continue
		}
		v, err := client.CreateVLAN(ctx, metal.CreateVLANRequest{
			Metro: metro, VXLAN: vx,
			Description: fmt.Sprintf("VLAN %d for Harvester nodes (harvester-equinix-addon)", vx),
			Tags:        []string{equinixv1.ClusterTag(clusterID)},
		})
		if failure.ClassOf(err) == failure.Invalid {
			// A VXLAN is unique per project and metro: the refusal may mean
			// another server of the pool created it since our list.
			if again, lerr := listIDs(ctx, client, metro); lerr == nil && again[vx] != "" {
				ids[vx] = again[vx]
				continue
			}
		}
		if err != nil {
			return nil, created, fmt.Errorf("creating VLAN %d in metro %s: %w", vx, metro, err)
		}
		ids[vx] = v.ID
		created = append(created, vx)
	}
	cache.store(client.ProjectID(), metro, ids)
	return ids, created, nil
}

// listIDs maps the VXLAN numbers of metro's VLANs to their IDs.
func listIDs(ctx context.Context, client metal.Client, metro string) (map[int]string, error) {
	vlans, err := client.ListVLANs(ctx, metro)
	if err != nil {
		return nil, err
	}
	ids := map[int]string{}
	for _, v := range vlans {
		if strings.EqualFold(v.Metro, metro) {
			ids[v.VXLAN] = v.ID
		}
	}
	return ids, nil
}
