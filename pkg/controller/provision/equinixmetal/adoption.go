package equinixmetal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// adoptionLists shares the look for an Instance's device before its first
// create among the Instances of a pool that create at about the same time:
// one paginated list of the pool's devices serves a whole wave of creates,
// where one list per server cost a call each.
//
// The first create of an Instance needs no fresher list than that. Its intent
// is written before the call, with the resource version the Instance was
// read at, so a device made by this Instance exists only if its status says a
// create was sent; the list then is what adopts a device whose Instance lost
// its status some other way. An Instance whose status says a create was sent
// (its answer lost) lists by its own tag, afresh, every time.
type adoptionLists struct {
	// ttl is how long a list serves new creates.
	ttl   time.Duration
	now   func() time.Time
	group singleflight.Group

	mu    sync.Mutex
	lists map[string]adoptionList // by project and pool tag
}

type adoptionList struct {
	at time.Time
	// byInstance holds the listed devices by their Instance tag.
	byInstance map[string][]metal.Device
}

func newAdoptionLists(ttl time.Duration) *adoptionLists {
	return &adoptionLists{ttl: ttl, now: time.Now, lists: map[string]adoptionList{}}
}

// devicesOf returns the devices of the client's project that carry
// instanceTag, from a list of the pool's devices no older than the ttl.
func (a *adoptionLists) devicesOf(ctx context.Context, client metal.Client, poolTag, instanceTag string) ([]metal.Device, error) {
	key := client.ProjectID() + "/" + poolTag
	a.mu.Lock()
	l, ok := a.lists[key]
	a.mu.Unlock()
	if !ok || a.now().Sub(l.at) >= a.ttl {
		fresh, err, _ := a.group.Do(key, func() (interface{}, error) {
			return a.list(ctx, client, key, poolTag)
		})
		if err != nil {
			return nil, err
		}
		l = fresh.(adoptionList)
	}
	return l.byInstance[instanceTag], nil
}

func (a *adoptionLists) list(ctx context.Context, client metal.Client, key, poolTag string) (adoptionList, error) {
	at := a.now()
	devs, err := client.ListDevices(ctx, metal.ListDevicesOptions{Tag: poolTag, Brief: true})
	if err != nil {
		return adoptionList{}, fmt.Errorf("listing the pool's devices: %w", err)
	}
	l := adoptionList{at: at, byInstance: map[string][]metal.Device{}}
	for _, d := range devs {
		if uid, ok := equinixv1.TagValue(d.Tags, equinixv1.TagInstance); ok {
			tag := equinixv1.InstanceTag(uid)
			l.byInstance[tag] = append(l.byInstance[tag], d)
		}
	}
	a.mu.Lock()
	a.lists[key] = l
	// Keep the map from growing with pools long gone.
	for k, old := range a.lists {
		if at.Sub(old.at) >= a.ttl {
			delete(a.lists, k)
		}
	}
	a.mu.Unlock()
	return l, nil
}
