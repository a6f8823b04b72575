package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// claimSlack is how much earlier than the campaign's watch saw a claim the
// controller may have written it (and sent its server commands): the watch
// runs behind the apiserver, the more so while the apiserver restarts.
const claimSlack = 5 * time.Second

// claimChange is one change of an Inventory's claim-uid, as the campaign's
// watch saw it ("" when the server became free).
type claimChange struct {
	at  time.Time
	uid string
}

// claimWindow is one claim of a server: from when it was seen taken until
// it was seen freed (zero while it lasts).
type claimWindow struct {
	uid      string
	from, to time.Time
}

// instanceSeen is what the watch knows of one Instance of the owned pools:
// removingRV is the resource version of the first state seen being removed
// (one etcd orders every object's versions, so they compare).
type instanceSeen struct {
	name, pool string
	removingRV uint64
	gone       bool
}

// handover is a claim-uid that changed from one Instance's to another's
// without the server seen free in between.
type handover struct {
	inv, from, to string
	rv            uint64
}

// claimTimeline follows the claims on the run's Inventories and the
// Instances of its pools, each through a watch of its own.
type claimTimeline struct {
	prefix string
	mu     sync.Mutex
	// changes are each Inventory's claim-uid changes, in order.
	changes   map[string][]claimChange
	instances map[string]*instanceSeen
	handovers []handover
	taken     int
	// quarantined are the servers seen set aside (label LabelQuarantined),
	// and setAsideClaims the claims seen taken on one while set aside.
	quarantined    map[string]bool
	setAsideClaims []string
}

func watchClaims(ctx context.Context, env *framework.Env, prefix string) *claimTimeline {
	c := &claimTimeline{prefix: prefix, changes: map[string][]claimChange{}, instances: map[string]*instanceSeen{}, quarantined: map[string]bool{}}
	invs := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	insts := env.Client.EquinixV1().Instances()
	// The Instances first: a claim is judged by what is known of the
	// Instance it replaced.
	instInf := cache.NewSharedInformer(&cache.ListWatch{
		ListFunc:  func(o metav1.ListOptions) (runtime.Object, error) { return insts.List(ctx, o) },
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) { return insts.Watch(ctx, o) },
	}, &equinixv1.Instance{}, 0)
	_, _ = instInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.instance, UpdateFunc: func(_, n any) { c.instance(n) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if i, ok := obj.(*equinixv1.Instance); ok {
				c.mu.Lock()
				if s := c.instances[string(i.UID)]; s != nil {
					s.gone = true
				}
				c.mu.Unlock()
			}
		},
	})
	go instInf.Run(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), instInf.HasSynced)
	listed := make(chan struct{})
	go c.follow(ctx, invs, listed)
	select {
	case <-listed:
	case <-ctx.Done():
	}
	return c
}

// inventoryClient is the part of the Inventories' client the watch uses.
type inventoryClient interface {
	List(ctx context.Context, o metav1.ListOptions) (*seederv1alpha1.InventoryList, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// follow watches the Inventories from the resource version it last saw,
// again at once after the watch broke (an informer's reflector backs off
// for seconds after repeated apiserver restarts, and a claim taken and
// released meanwhile would be lost to its relist). Only a relist (the
// version expired) can miss states: a claim it finds is taken as opened
// when the watch broke, and one it finds gone as closed at the relist.
func (c *claimTimeline) follow(ctx context.Context, invs inventoryClient, listed chan<- struct{}) {
	rv := ""
	var broke time.Time
	for ctx.Err() == nil {
		if rv == "" {
			list, err := invs.List(ctx, metav1.ListOptions{})
			if err != nil {
				pause(ctx)
				continue
			}
			opened, now := broke, time.Now()
			if opened.IsZero() {
				opened = now
			}
			for i := range list.Items {
				c.inventory(&list.Items[i], opened, now)
			}
			rv = list.ResourceVersion
			if listed != nil {
				close(listed)
				listed = nil
			}
		}
		var caughtUp uint64
		if !broke.IsZero() {
			// What changed while the watch was away comes first on the
			// resumed stream, read some seconds after it happened (an
			// apiserver that stops closes its watches before its last
			// writes): versions up to the collection's current one are
			// taken as of the break.
			cur, err := invs.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				pause(ctx)
				continue
			}
			caughtUp = resourceVersion(cur.ResourceVersion)
		}
		w, err := invs.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			// broke stays when the stream ended: nothing was seen since.
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
			}
			pause(ctx)
			continue
		}
		next := c.drain(w, rv, broke, caughtUp)
		// A stream refused as too old delivered nothing of the time the
		// watch was away: the relist that follows counts from the break
		// before it, when the watch was last current.
		if next != "" || broke.IsZero() {
			broke = time.Now()
		}
		rv = next
	}
}

// drain takes a watch's events until it ends, and returns the version to
// go on from ("" when it expired). A claim in a state of version up to
// caughtUp (what the stream replays of the time it was away) counts from
// broke.
func (c *claimTimeline) drain(w watch.Interface, rv string, broke time.Time, caughtUp uint64) string {
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			if inv, ok := ev.Object.(*seederv1alpha1.Inventory); ok {
				now := time.Now()
				opened := now
				if !broke.IsZero() && resourceVersion(inv.ResourceVersion) <= caughtUp {
					opened = broke
				}
				c.inventory(inv, opened, now)
				rv = inv.ResourceVersion
			}
		case watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil {
				rv = m.GetResourceVersion()
			}
		case watch.Error:
			if err := apierrors.FromObject(ev.Object); apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				return ""
			}
		}
	}
	return rv
}

func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

func (c *claimTimeline) instance(obj any) {
	i, ok := obj.(*equinixv1.Instance)
	if !ok || !strings.HasPrefix(i.Name, c.prefix) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.instances[string(i.UID)]
	if s == nil {
		s = &instanceSeen{name: i.Name, pool: i.Labels[equinixv1.LabelPool]}
		c.instances[string(i.UID)] = s
	}
	if s.removingRV == 0 && i.DeletionTimestamp != nil {
		s.removingRV = resourceVersion(i.ResourceVersion)
	}
}

func resourceVersion(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

// inventory takes one state of an Inventory: a claim found in it counts
// from opened, its end from closed.
func (c *claimTimeline) inventory(inv *seederv1alpha1.Inventory, opened, closed time.Time) {
	if !strings.HasPrefix(inv.Name, c.prefix) {
		return
	}
	uid := inv.Annotations[equinixv1.AnnotationClaimUID]
	c.mu.Lock()
	defer c.mu.Unlock()
	changes := c.changes[inv.Name]
	last := ""
	if len(changes) > 0 {
		last = changes[len(changes)-1].uid
	}
	setAside := inv.Labels[equinixv1.LabelQuarantined] != ""
	if setAside {
		c.quarantined[inv.Name] = true
	}
	if uid == last {
		return
	}
	if uid != "" {
		c.taken++
		if setAside {
			// A claim is written over the Inventory it read: taken on a
			// server that was set aside, it carries the label with it.
			c.setAsideClaims = append(c.setAsideClaims, fmt.Sprintf("server %s was claimed by %s (resource version %s) while quarantined (%s)",
				inv.Name, inv.Labels[equinixv1.LabelClaimedBy], inv.ResourceVersion, inv.Annotations[equinixv1.AnnotationQuarantineReason]))
		}
	}
	if last != "" && uid != "" {
		c.handovers = append(c.handovers, handover{inv: inv.Name, from: last, to: uid, rv: resourceVersion(inv.ResourceVersion)})
	}
	at := opened
	if uid == "" {
		at = closed
	}
	c.changes[inv.Name] = append(changes, claimChange{at: at, uid: uid})
}

// doubleClaims judges the handovers: a server's claim that passed from one
// Instance to another while the first was not being removed was written
// over a live claim (a claim written without the Inventory's resource
// version, from a stale cache): two Instances held the server. A correct
// release frees a server only once its Instance is being removed, so even
// a watch that missed the free state in between (a relist) sees the first
// Instance removed at an earlier resource version than the second claim.
func (c *claimTimeline) doubleClaims() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, h := range c.handovers {
		prev := c.instances[h.from]
		switch {
		case prev == nil:
			out = append(out, fmt.Sprintf("server %s passed from an Instance never seen (uid %s) to %s", h.inv, h.from, nameOfSeen(c.instances[h.to], h.to)))
		case prev.removingRV == 0 && prev.gone:
			// Deleted between two relists: when is not known.
		case prev.removingRV == 0 || prev.removingRV > h.rv:
			out = append(out, fmt.Sprintf("server %s was claimed by %s (resource version %d) while %s held it and was not being removed (removed at %d)",
				h.inv, nameOfSeen(c.instances[h.to], h.to), h.rv, prev.name, prev.removingRV))
		}
	}
	return out
}

func nameOfSeen(s *instanceSeen, uid string) string {
	if s == nil {
		return "uid " + uid + " (never seen)"
	}
	return s.name
}

// current is the claim-uid the watch holds for an Inventory now.
func (c *claimTimeline) current(inv string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	changes := c.changes[inv]
	if len(changes) == 0 {
		return ""
	}
	return changes[len(changes)-1].uid
}

// windows are an Inventory's claims.
func (c *claimTimeline) windows(inv string) []claimWindow {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []claimWindow
	for _, ch := range c.changes[inv] {
		if n := len(out); n > 0 && out[n-1].to.IsZero() {
			out[n-1].to = ch.at
		}
		if ch.uid != "" {
			out = append(out, claimWindow{uid: ch.uid, from: ch.at})
		}
	}
	return out
}

// claimedAround reports whether a claim of inv (of uid, "" for any) was
// open at some moment in [from, to], the claims seen up to claimSlack
// early.
func (c *claimTimeline) claimedAround(inv, uid string, from, to time.Time) bool {
	for _, w := range c.windows(inv) {
		if uid != "" && w.uid != uid {
			continue
		}
		if !w.from.Add(-claimSlack).After(to) && (w.to.IsZero() || !w.to.Before(from)) {
			return true
		}
	}
	return false
}

// everClaimed lists the Inventories claimed at some time, with the pools
// of their claims.
func (c *claimTimeline) everClaimed() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]string{}
	for inv, changes := range c.changes {
		for _, ch := range changes {
			if ch.uid == "" {
				continue
			}
			pool := "?"
			if s := c.instances[ch.uid]; s != nil {
				pool = s.pool
			}
			out[inv] = append(out[inv], pool)
		}
	}
	return out
}

// claimsTaken counts the claims seen.
func (c *claimTimeline) claimsTaken() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken
}

// quarantineClaims are the claims taken on a quarantined server, and how
// many servers were seen quarantined.
func (c *claimTimeline) quarantineClaims() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.setAsideClaims), len(c.quarantined)
}
