package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// taintHistory is what the watch saw of the fence nodes' out-of-service
// taints: each change with the resourceVersion of the Node that showed it
// and when it arrived. A Node's resourceVersion is that of its last write,
// and the apiserver orders every write by it, so a taint seen on at
// resourceVersion a and off at b was on in the apiserver from a until a
// write at most b. Two nodes' spans that overlap in that order were held
// at once; the order the watch delivered them in is only the watch's (a
// relist after an apiserver restart, or a late delivery, may show one
// node's change after another node's later one).
type taintHistory struct {
	spans []taintSpan
	// open is each tainted node's span, by index into spans.
	open map[string]int
	// lastRV is the highest resourceVersion seen; backwards counts changes
	// that arrived with a lower one (delivered out of the apiserver's
	// order, or from a relist).
	lastRV    uint64
	backwards int
}

// taintSpan is one time a node was tainted: the resourceVersions (and
// arrival times) of the Node when the watch saw the taint on and off; off
// is 0 while it is on.
type taintSpan struct {
	node        string
	on, off     uint64
	onAt, offAt time.Time
}

func newTaintHistory() *taintHistory { return &taintHistory{open: map[string]int{}} }

// observe records the taint of node as a Node at resourceVersion rv shows
// it, arrived at at. It says whether the taint went on or off.
func (h *taintHistory) observe(node string, on bool, rv uint64, at time.Time) bool {
	if rv < h.lastRV {
		h.backwards++
	} else {
		h.lastRV = rv
	}
	i, tainted := h.open[node]
	switch {
	case on && !tainted:
		h.open[node] = len(h.spans)
		h.spans = append(h.spans, taintSpan{node: node, on: rv, onAt: at})
		return true
	case !on && tainted:
		h.spans[i].off, h.spans[i].offAt = rv, at
		delete(h.open, node)
		return true
	}
	return false
}

// held sweeps the spans in resourceVersion order: the most nodes the
// apiserver held tainted at once, and, when that exceeds bound, the first
// moment it did, with the writes that made it.
func (h *taintHistory) held(bound int) (int, string) {
	type edge struct {
		rv   uint64
		on   bool
		span int
	}
	var edges []edge
	for i, s := range h.spans {
		edges = append(edges, edge{rv: s.on, on: true, span: i})
		if s.off != 0 {
			edges = append(edges, edge{rv: s.off, span: i})
		}
	}
	// Two writes never share a resourceVersion; an off and an on at the
	// same one would be one Node's, and its off goes first.
	sort.SliceStable(edges, func(a, b int) bool {
		if edges[a].rv != edges[b].rv {
			return edges[a].rv < edges[b].rv
		}
		return !edges[a].on && edges[b].on
	})
	on := map[int]bool{}
	most, first := 0, ""
	for _, e := range edges {
		if !e.on {
			delete(on, e.span)
			continue
		}
		on[e.span] = true
		if len(on) > most {
			most = len(on)
		}
		if len(on) > bound && first == "" {
			first = h.describe(on)
		}
	}
	return most, first
}

// describe names the spans of a moment: each node's taint with the
// resourceVersions and arrival times of its on and off.
func (h *taintHistory) describe(spans map[int]bool) string {
	var parts []string
	for i := range spans {
		parts = append(parts, h.spans[i].String())
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func (s taintSpan) String() string {
	off := "still on"
	if s.off != 0 {
		off = fmt.Sprintf("off at rv %d%s", s.off, arrived(s.offAt))
	}
	return fmt.Sprintf("%s on at rv %d%s, %s", s.node, s.on, arrived(s.onAt), off)
}

// arrived is when the watch delivered a change; nothing for one read
// from the store.
func arrived(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	return " (" + at.UTC().Format("15:04:05.000") + ")"
}

// trace is every span, in the order the watch saw them go on.
func (h *taintHistory) trace() string {
	parts := make([]string, 0, len(h.spans))
	for _, s := range h.spans {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}

// differs says whether two histories hold other spans (by node and
// resourceVersions, whatever the arrival times): a watch that missed or
// delayed a change differs from etcd's.
func (h *taintHistory) differs(o *taintHistory) bool {
	key := func(x *taintHistory) []string {
		out := make([]string, 0, len(x.spans))
		for _, s := range x.spans {
			out = append(out, fmt.Sprintf("%s %d %d", s.node, s.on, s.off))
		}
		sort.Strings(out)
		return out
	}
	return strings.Join(key(h), ",") != strings.Join(key(o), ",")
}
