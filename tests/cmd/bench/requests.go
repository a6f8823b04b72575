package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/equinix/equinix-sdk-go/services/metalv1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// apiCalls keeps the Metal API requests of the simulator's log: the metadata
// service the simulated servers talk to is not the controller's cost.
func apiCalls(log []metalsim.Request) []metalsim.Request {
	out := make([]metalsim.Request, 0, len(log))
	for _, r := range log {
		if strings.HasPrefix(r.Path, apiPrefix+"/") {
			out = append(out, r)
		}
	}
	return out
}

// isSweepList tells the periodic sweep's device list (by this cluster's tag)
// from the per-Instance adoption list (by the Instance's tag).
func isSweepList(r metalsim.Request) bool {
	if r.Operation != metalsim.OpFindProjectDevices {
		return false
	}
	q, err := url.ParseQuery(r.Query)
	return err == nil && strings.HasPrefix(q.Get("tag"), equinixv1.TagCluster)
}

// isPeriodicList is what the sweep sends (its device list and the VLAN list
// of its VLAN garbage collection) and what the hardware chain sends: the
// project's event log once per --device-events-interval, and the plan
// catalog at most hourly. Nothing else may run while servers idle.
func isPeriodicList(r metalsim.Request) bool {
	return isSweepList(r) || r.Operation == metalsim.OpFindVirtualNetworks ||
		r.Operation == metalsim.OpFindProjectEvents || r.Operation == metalsim.OpFindPlans
}

// opCounts counts requests by operation.
type opCounts map[string]int

func countOps(reqs []metalsim.Request, keep func(metalsim.Request) bool) opCounts {
	out := opCounts{}
	for _, r := range reqs {
		if keep == nil || keep(r) {
			out[r.Operation]++
		}
	}
	return out
}

func (c opCounts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// ops lists the operations, most frequent first.
func (c opCounts) ops() []string {
	out := make([]string, 0, len(c))
	for op := range c {
		out = append(out, op)
	}
	sort.Slice(out, func(a, b int) bool {
		if c[out[a]] != c[out[b]] {
			return c[out[a]] > c[out[b]]
		}
		return out[a] < out[b]
	})
	return out
}

// perMinute renders the counts as calls per minute over window minutes.
func (c opCounts) perMinute(minutes float64) string {
	if len(c) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(c))
	for _, op := range c.ops() {
		parts = append(parts, fmt.Sprintf("%s %.2f", op, float64(c[op])/minutes))
	}
	return strings.Join(parts, ", ")
}

// successfulCreates counts createDevice requests the simulator stored.
func successfulCreates(reqs []metalsim.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Operation == metalsim.OpCreateDevice && r.Status == http.StatusCreated {
			n++
		}
	}
	return n
}

// throttledCount counts 429 answers.
func throttledCount(reqs []metalsim.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// writeRequestLog keeps a scenario's Metal API traffic for analysis: one
// line per request, its time from the first, method, path, operation and
// status. The log never holds a token or a body.
func writeRequestLog(path string, reqs []metalsim.Request) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range reqs {
		q := ""
		if r.Query != "" {
			q = "?" + r.Query
		}
		fmt.Fprintf(&b, "%+8.3fs %-6s %s%s %s %d\n", r.Time.Sub(reqs[0].Time).Seconds(), r.Method, r.Path, q, r.Operation, r.Status)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the request log: %w", err)
	}
	return nil
}

// deviceSequences lists, per device, the operations addressed to it or to
// one of its ports, in order: what one server cost beyond the project-wide
// list, create and VLAN calls.
func deviceSequences(reqs []metalsim.Request, devices []metalv1.Device) map[string][]string {
	portOwner := map[string]string{}
	for _, d := range devices {
		for _, p := range d.GetNetworkPorts() {
			portOwner[p.GetId()] = d.GetId()
		}
	}
	out := map[string][]string{}
	for _, r := range reqs {
		parts := strings.Split(strings.TrimPrefix(r.Path, apiPrefix+"/"), "/")
		if len(parts) < 2 {
			continue
		}
		dev := ""
		switch parts[0] {
		case "devices":
			dev = parts[1]
		case "ports":
			dev = portOwner[parts[1]]
		}
		if dev != "" {
			out[dev] = append(out[dev], r.Operation)
		}
	}
	return out
}

// typicalSequence is the most frequent per-device sequence, run-length
// encoded, and how many devices followed it.
func typicalSequence(seqs map[string][]string) (string, int) {
	freq := map[string]int{}
	for _, ops := range seqs {
		freq[runLength(ops)]++
	}
	best, n := "", 0
	for s, c := range freq {
		if c > n || (c == n && s < best) {
			best, n = s, c
		}
	}
	return best, n
}

// runLength writes repeated operations once with a count: a ×3, b.
func runLength(ops []string) string {
	var parts []string
	for i := 0; i < len(ops); {
		j := i
		for j < len(ops) && ops[j] == ops[i] {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", ops[i], j-i))
		} else {
			parts = append(parts, ops[i])
		}
		i = j
	}
	return strings.Join(parts, ", ")
}
