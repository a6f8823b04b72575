package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// fleetWatch records each Inventory's polls and each forwarded hardware
// Event with the time it arrived. The first contact's poll is in the
// status the controller first writes (status.hardware.lastPolled); later
// polls that find nothing new write no status, so they are the changes of
// the controller's metric of each node's last poll (followPolls).
type fleetWatch struct {
	mu sync.Mutex
	// polls are each node's polls: the status's lastPolled, and when the
	// watch brought it.
	polls map[string][]fleetPoll
	// events are each node's forwarded hardware Events, by arrival.
	events map[string][]time.Time
	stop   context.CancelFunc
}

func (b *bench) watchFleet(ctx context.Context) (*fleetWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &fleetWatch{polls: map[string][]fleetPoll{}, events: map[string][]time.Time{}, stop: cancel}
	invs := b.env.client.MetalV1alpha1().Inventories(namespace)
	inventories := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return invs.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return invs.Watch(ctx, o)
		},
	}, &seederv1alpha1.Inventory{}, 0, cache.Indexers{})
	record := func(obj any) {
		inv, ok := obj.(*seederv1alpha1.Inventory)
		if !ok || inv.Status.Hardware == nil || inv.Status.Hardware.LastPolled == nil {
			return
		}
		w.note(inv.Name, inv.Status.Hardware.LastPolled.Time)
	}
	if _, err := inventories.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	evs := b.env.kube.CoreV1().Events(metav1.NamespaceAll)
	events := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return evs.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return evs.Watch(ctx, o)
		},
	}, &corev1.Event{}, 0, cache.Indexers{})
	if _, err := events.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		e, ok := obj.(*corev1.Event)
		if !ok || e.Reason != equinixv1.ReasonHardwareEvent && e.Reason != equinixv1.ReasonHardwareWarning {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events[e.InvolvedObject.Name] = append(w.events[e.InvolvedObject.Name], time.Now())
	}}); err != nil {
		cancel()
		return nil, err
	}
	go inventories.RunWithContext(ctx)
	go events.RunWithContext(ctx)
	syncCtx, done := context.WithTimeout(ctx, time.Minute)
	defer done()
	if !cache.WaitForCacheSync(syncCtx.Done(), inventories.HasSynced, events.HasSynced) {
		cancel()
		return nil, fmt.Errorf("the Inventory and Event watches did not sync")
	}
	return w, nil
}

// note records a poll of node at at, once.
func (w *fleetWatch) note(node string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.polls[node] {
		if p.at.Equal(at) {
			return
		}
	}
	w.polls[node] = append(w.polls[node], fleetPoll{at: at, seen: time.Now()})
}

// followPolls records the polls the controller's metric shows, scraping it
// every few seconds until ctx ends: each node's last poll (whole seconds)
// changes once per poll, and polls of a node are an interval apart. The
// scrapes cost the controller a little CPU of their own.
func (w *fleetWatch) followPolls(ctx context.Context, ctrl *controller, every time.Duration) {
	last := map[string]float64{}
	for first := true; ; first = false {
		if ms, err := ctrl.scrape(ctx); err == nil {
			for _, m := range ms[metricLastPoll].GetMetric() {
				node, v := labelsOf(m)["node"], m.GetGauge().GetValue()
				if prev, ok := last[node]; ok && v != prev && !first {
					w.note(node, time.Unix(int64(v), 0))
				}
				last[node] = v
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// polled counts the nodes polled at least once.
func (w *fleetWatch) polled() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.polls)
}

// fleetPoll is one poll of a node.
type fleetPoll struct{ at, seen time.Time }

// pollsIn counts the polls of the nodes in [from, to), by node (whole
// seconds).
func (w *fleetWatch) pollsIn(from, to time.Time) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	from, to = from.Truncate(time.Second), to.Truncate(time.Second)
	for node, ps := range w.polls {
		for _, p := range ps {
			if !p.at.Before(from) && p.at.Before(to) {
				out[node]++
			}
		}
	}
	return out
}

// firstPolls are each node's first poll.
func (w *fleetWatch) firstPolls() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]time.Time, 0, len(w.polls))
	for _, ps := range w.polls {
		out = append(out, ps[0].at)
	}
	return out
}

// eventAfter is when the first hardware Event about node arrived after
// at, if one did.
func (w *fleetWatch) eventAfter(node string, at time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events[node] {
		if e.After(at) {
			return e, true
		}
	}
	return time.Time{}, false
}
