package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/harvester/harvester-equinix-addon/pkg/server"
)

// chartMemoryLimit is the chart's default resources.limits.memory
// (memlimit_test.go keeps the two equal).
const chartMemoryLimit = "256Mi"

// goMemLimit is the GOMEMLIMIT the controller sets itself in a pod whose
// memory limit is limit ("none" or empty: no limit, no GOMEMLIMIT).
func goMemLimit(limit string) (string, error) {
	if limit == "" || strings.EqualFold(limit, "none") {
		return "", nil
	}
	q, err := resource.ParseQuantity(limit)
	if err != nil {
		return "", fmt.Errorf("memory limit %q: %w", limit, err)
	}
	if q.Sign() <= 0 {
		return "", fmt.Errorf("memory limit %q is not positive", limit)
	}
	return fmt.Sprintf("%dMiB", int64(float64(q.Value())*server.MemoryLimitRatio)>>20), nil
}
