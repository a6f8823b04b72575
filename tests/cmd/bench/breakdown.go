package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// breakdown is where a run's time went, from two snapshots around it.
type breakdown struct {
	wall    time.Duration
	threads int
	// handlers is the lasso handler time per controller kind.
	handlers map[string]histogram
	// metalClient is the controller's own timing of its Metal calls (HTTP
	// round trip, the simulator's handling included).
	metalClient histogram
	// simHandling is the simulator's time answering, measured server side.
	simHandling time.Duration
	// cpu is the controller process's CPU seconds.
	cpu float64
	// writes counts the apiserver's mutating requests on Instances by verb.
	writes map[string]float64
	// requests counts every apiserver request by resource and verb: where
	// the client-side limits are spent.
	requests map[string]float64
	// clientWait is the controller's requests' wait in its client-side
	// limits.
	clientWait histogram
}

func newBreakdown(before, after snapshot, threads int) breakdown {
	bd := breakdown{
		wall: after.at.Sub(before.at), threads: threads,
		handlers:    map[string]histogram{},
		metalClient: after.ctrl.histogram(metricMetalDuration, nil).minus(before.ctrl.histogram(metricMetalDuration, nil)),
		simHandling: after.handling - before.handling,
		cpu:         after.cpu - before.cpu,
		writes:      instanceWrites(after.apiserver, before.apiserver),
		requests:    requestsByResource(after.apiserver, before.apiserver),
		clientWait:  after.ctrl.histogram(metricClientWait, nil).minus(before.ctrl.histogram(metricClientWait, nil)),
	}
	for _, kind := range controllerKinds(after.ctrl) {
		match := func(l map[string]string) bool { return kindOf(l[labelController]) == kind }
		bd.handlers[kind] = after.ctrl.histogram(metricReconcileTime, match).minus(before.ctrl.histogram(metricReconcileTime, match))
	}
	return bd
}

// kindOf shortens lasso's controller name ("equinix.harvesterhci.io/v1,
// Resource=instances") to the resource.
func kindOf(controllerName string) string {
	if i := strings.LastIndex(controllerName, "="); i >= 0 {
		return controllerName[i+1:]
	}
	return controllerName
}

func controllerKinds(ms metrics) []string {
	set := map[string]bool{}
	for _, m := range ms[metricReconcileTime].GetMetric() {
		set[kindOf(labelsOf(m)[labelController])] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// instanceWrites counts mutating apiserver requests on Instances between two
// scrapes, keyed by verb and subresource.
func instanceWrites(after, before metrics) map[string]float64 {
	// Custom resources are counted by HTTP method, built-in ones by verb.
	writeVerb := map[string]string{
		"POST": "create", "CREATE": "create", "PUT": "update", "UPDATE": "update",
		"PATCH": "patch", "APPLY": "patch", "DELETE": "delete",
	}
	key := func(l map[string]string) string {
		if l["subresource"] != "" {
			return writeVerb[l["verb"]] + " " + l["subresource"]
		}
		return writeVerb[l["verb"]]
	}
	out := map[string]float64{}
	add := func(ms metrics, sign float64) {
		for _, m := range ms["apiserver_request_total"].GetMetric() {
			l := labelsOf(m)
			if l["resource"] == "instances" && writeVerb[l["verb"]] != "" {
				out[key(l)] += sign * m.GetCounter().GetValue()
			}
		}
	}
	add(after, 1)
	add(before, -1)
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// requestsByResource counts apiserver requests between two scrapes by
// resource (and subresource) and verb, watches left out.
func requestsByResource(after, before metrics) map[string]float64 {
	out := map[string]float64{}
	add := func(ms metrics, sign float64) {
		for _, m := range ms["apiserver_request_total"].GetMetric() {
			l := labelsOf(m)
			if l["resource"] == "" || l["verb"] == "WATCH" {
				continue
			}
			k := l["resource"]
			if l["subresource"] != "" {
				k += "/" + l["subresource"]
			}
			out[k+" "+strings.ToLower(l["verb"])] += sign * m.GetCounter().GetValue()
		}
	}
	add(after, 1)
	add(before, -1)
	for k, v := range out {
		if v < 1 {
			delete(out, k)
		}
	}
	return out
}

func (bd breakdown) totalWrites() float64 {
	var t float64
	for _, v := range bd.writes {
		t += v
	}
	return t
}

// instanceBusy is the Instance controller's handler time.
// instanceWritesPerServer is the Instance writes per server of the fleet.
func (bd breakdown) instanceWritesPerServer(servers int) float64 {
	return bd.totalWrites() / float64(servers)
}

func (bd breakdown) instanceBusy() float64 { return bd.handlers[instancesResource].sum }

// instancesResource names the Instance controller in lasso's metrics.
const instancesResource = "instances"

// summary is the share line of the table: how busy the Instance workers
// were and how much of that was waiting on the Metal API.
func (bd breakdown) summary() string {
	capacity := bd.wall.Seconds() * float64(bd.threads)
	busy := bd.instanceBusy()
	return fmt.Sprintf("Instance handlers busy %.0f s = %s of %d workers × wall; of that, waiting on Metal %s "+
		"(simulator answering %s), controller + apiserver %s; controller CPU %.1f s (%s of one core)",
		busy, pct(busy, capacity), bd.threads, pct(bd.metalClient.sum, busy), pct(bd.simHandling.Seconds(), busy),
		pct(busy-bd.metalClient.sum, busy), bd.cpu, pct(bd.cpu, bd.wall.Seconds()))
}

// details are the tables behind the summary.
func (bd breakdown) details(servers int) []string {
	out := []string{
		"| Controller | Handler runs | Busy (s) | Mean | p50 | p95 | p99 |",
		"|---|---|---|---|---|---|---|",
	}
	kinds := make([]string, 0, len(bd.handlers))
	for k := range bd.handlers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		h := bd.handlers[k]
		if h.count == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("| %s | %.0f | %.1f | %s | %s | %s | %s |", k, h.count, h.sum,
			ms(h.mean()), ms(h.quantile(0.5)), ms(h.quantile(0.95)), ms(h.quantile(0.99))))
	}
	out = append(out, "",
		fmt.Sprintf("- Wall time %s; %d workers per controller; Instance worker capacity %.0f worker-seconds.",
			seconds(bd.wall), bd.threads, bd.wall.Seconds()*float64(bd.threads)),
		fmt.Sprintf("- Metal calls as the controller timed them: %.0f calls, %.1f s in all, mean %s.",
			bd.metalClient.count, bd.metalClient.sum, ms(bd.metalClient.mean())),
		fmt.Sprintf("- The simulator's own handling time (measured around its HTTP handler): %.1f s.", bd.simHandling.Seconds()),
		fmt.Sprintf("- Controller process CPU: %.1f s (%s of one core over the wall time).", bd.cpu, pct(bd.cpu, bd.wall.Seconds())),
		fmt.Sprintf("- Instance writes to the apiserver: %.0f (%.1f per server, %.1f per second): %s.",
			bd.totalWrites(), bd.totalWrites()/float64(servers), bd.totalWrites()/bd.wall.Seconds(), formatCounts(bd.writes)),
		fmt.Sprintf("- The controller's apiserver requests waited in its client-side limits (--kube-api-qps) %.1f s in all: "+
			"%.0f requests, mean %s, p50/p95/p99 %s/%s/%s.", bd.clientWait.sum, bd.clientWait.count, ms(bd.clientWait.mean()),
			ms(bd.clientWait.quantile(0.5)), ms(bd.clientWait.quantile(0.95)), ms(bd.clientWait.quantile(0.99))),
		fmt.Sprintf("- Every apiserver request in the window (all clients, the join agent's included), by resource and verb: %s.",
			formatCounts(bd.requests)),
	)
	return out
}

func formatCounts(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
