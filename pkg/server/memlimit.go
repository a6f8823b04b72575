package server

import (
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/sirupsen/logrus"
)

// MemoryLimitRatio is the share of the container's memory limit the Go
// runtime is told to stay under. Without it the garbage collector only looks
// at heap growth (GOGC) and, with thousands of servers in the caches, lets the
// heap double past the pod's limit into an OOM kill; the rest is headroom for
// what the runtime does not count (the binary's pages, cgo).
const MemoryLimitRatio = 0.9

// applyMemoryLimit sets the runtime's soft memory limit from the cgroup's
// memory limit (the chart's resources.limits.memory). GOMEMLIMIT in the
// environment wins; AUTOMEMLIMIT overrides the ratio, or switches it off.
func applyMemoryLimit() {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		logrus.Infof("Go memory limit from GOMEMLIMIT: %s", v)
		return
	}
	limit, err := memlimit.SetGoMemLimitWithOpts(
		memlimit.WithRatio(MemoryLimitRatio),
		memlimit.WithProvider(memlimit.FromCgroup),
	)
	switch {
	case err != nil:
		logrus.Infof("Go memory limit not set from the container: %v", err)
	case limit > 0:
		logrus.Infof("Go memory limit %d MiB, from the container's memory limit", limit>>20)
	default:
		logrus.Info("Go memory limit not set: no container memory limit (or AUTOMEMLIMIT=off)")
	}
}
