// Package chaos is the randomized fault campaign. Each run creates, scales,
// edits and deletes pools while it SIGKILLs and restarts the real controller
// binary (also from inside the simulator's notifications, before the request
// that caused them is answered), injects 429s, 5xx, latency and dropped
// connections into the Metal API, restarts the kube-apiserver, deletes devices
// out of band and makes nodes NotReady and Ready again, while the nodes of
// its BMC world (bmc_test.go) have their BMCs polled, powered and upset.
// Then it quiesces and checks the invariants against the simulators and the
// apiserver.
//
// Every random choice of a run comes from math/rand seeded with the run's
// seed, so a failure is replayed with CHAOS_SEED=<seed> CHAOS_RUNS=1 (the
// timing of the processes involved is not reproducible, the plan is).
package chaos

import (
	"os"
	"testing"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(framework.RunMain(m, cluster.Options{}, &shared))
}
