// Package vlans finds, creates and garbage-collects the Metal VLANs the addon
// attaches to its servers. Only VLANs carrying this cluster's tag are ever
// deleted, and only once no device port uses them and no Instance wants them.
package vlans

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// IDCache remembers a metro's VLAN IDs for a moment, so that the servers of a
// pool converging together list the metro's VLANs once rather than each. A
// stale entry can only name a VLAN deleted since; callers Forget the metro
// when a call with one of its IDs fails, and after deleting VLANs.
type IDCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]idEntry
	// metros serializes Ensure per project and metro: the servers of a new
	// pool reach their networking together, and without it each listed the
	// metro's VLANs, found them missing, and tried to create them.
	metros map[string]*sync.Mutex
}

type idEntry struct {
	ids map[int]string
	at  time.Time
}

// NewIDCache keeps entries for ttl.
func NewIDCache(ttl time.Duration) *IDCache {
	return &IDCache{ttl: ttl, now: time.Now, entries: map[string]idEntry{}, metros: map[string]*sync.Mutex{}}
}

func cacheKey(project, metro string) string { return project + "/" + strings.ToLower(metro) }

func (c *IDCache) lookup(project, metro string, vxlans []int, attached []string) (map[int]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[cacheKey(project, metro)]
	if !ok || c.now().Sub(e.at) >= c.ttl {
		return nil, false
	}
	for _, vx := range vxlans {
		if _, ok := e.ids[vx]; !ok {
			return nil, false
		}
	}
	known := make(map[string]bool, len(e.ids))
	for _, id := range e.ids {
		known[id] = true
	}
	for _, id := range attached {
		if !known[id] {
			return nil, false
		}
	}
	out := make(map[int]string, len(e.ids))
	for vx, id := range e.ids {
		out[vx] = id
	}
	return out, true
}

func (c *IDCache) store(project, metro string, ids map[int]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := make(map[int]string, len(ids))
	for k, v := range ids {
		cp[k] = v
	}
	c.entries[cacheKey(project, metro)] = idEntry{ids: cp, at: c.now()}
}

// lockMetro holds the metro until the returned func is called.
func (c *IDCache) lockMetro(project, metro string) func() {
	key := cacheKey(project, metro)
	c.mu.Lock()
	m, ok := c.metros[key]
	if !ok {
		m = &sync.Mutex{}
		c.metros[key] = m
	}
	c.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Forget drops a metro's entry.
func (c *IDCache) Forget(project, metro string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, cacheKey(project, metro))
}

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
			Tags:        []string{v1.ClusterTag(clusterID)},
		})
		if metal.ClassOf(err) == metal.ClassInvalid {
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

// Wanted is every VXLAN an Instance not being deleted attaches in metro, for
// the project of projectOf.
func Wanted(insts []*v1.Instance, metro string, sameProject func(*v1.Instance) bool) map[int]bool {
	out := map[int]bool{}
	for _, i := range insts {
		if i.DeletionTimestamp != nil || !strings.EqualFold(i.Spec.Metro, metro) || !sameProject(i) {
			continue
		}
		for _, vx := range network.VXLANs(&i.Spec.InstanceTemplate) {
			out[vx] = true
		}
	}
	return out
}

// GC deletes this cluster's VLANs in metro that no device uses and no
// Instance wants. It returns the VXLANs it deleted and how many of this
// cluster's VLANs it kept. A VLAN still in use, or one the API refuses to
// delete now, is left for the next pass.
func GC(ctx context.Context, client metal.Client, clusterID, metro string, wanted map[int]bool) (deleted []int, kept int, err error) {
	vlans, err := client.ListVLANs(ctx, metro)
	if err != nil {
		return nil, 0, err
	}
	for _, v := range vlans {
		if !slices.Contains(v.Tags, v1.ClusterTag(clusterID)) {
			continue
		}
		if wanted[v.VXLAN] || v.AssignedDevices > 0 {
			kept++
			continue
		}
		if err := client.DeleteVLAN(ctx, v.ID); err != nil {
			switch metal.ClassOf(err) {
			case metal.ClassNotFound:
				continue
			case metal.ClassBusy, metal.ClassInvalid:
				// Still assigned somewhere the list did not show yet.
				kept++
				continue
			}
			return deleted, kept, fmt.Errorf("deleting VLAN %d in metro %s: %w", v.VXLAN, metro, err)
		}
		deleted = append(deleted, v.VXLAN)
	}
	return deleted, kept, nil
}

// Users are the Instances whose wishes decide which VLANs stay.
type Users struct {
	Instances   equinixcontrollers.InstanceCache
	Credentials *credentials.Resolver
	ClusterID   string
}

// CollectGarbage runs GC for metro with what every Instance of the same Metal
// project wants, as the Instance cache shows it.
func (u Users) CollectGarbage(ctx context.Context, client metal.Client, metro string) ([]int, int, error) {
	insts, err := u.Instances.List(labels.Everything())
	if err != nil {
		return nil, 0, err
	}
	project := client.ProjectID()
	sameProject := func(i *v1.Instance) bool {
		if i.Status.ProjectID != "" {
			return i.Status.ProjectID == project
		}
		creds, err := u.Credentials.For(i.Spec.CredentialsSecret)
		// An Instance whose credentials cannot be read might be in this project:
		// keep what it wants rather than delete a VLAN it may use.
		return err != nil || creds.ProjectID == project
	}
	return GC(ctx, client, u.ClusterID, strings.ToLower(metro), Wanted(insts, metro, sameProject))
}
