package chart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHardwareIsTheSeederModesFormerName: an Addon whose valuesContent
// still says mode: hardware renders the install mode: seeder renders (the
// same Lease, RBAC, both Inventory policies, no Equinix CRD), with and
// without the pools of servers you own; only the controller's MODE keeps the name it was given,
// so that the controller logs that the name is deprecated.
func TestHardwareIsTheSeederModesFormerName(t *testing.T) {
	for _, extra := range [][]string{nil, {"--set", "ownedPools.enabled=true"}} {
		// The Inventory policies render only where the cluster serves them.
		extra = append(extra, vapServed...)
		_, seeder := render(t, append([]string{"--set", "mode=seeder"}, extra...)...)
		_, hardware := render(t, append([]string{"--set", "mode=hardware"}, extra...)...)
		assert.Equal(t, 1, strings.Count(hardware, `value: "hardware"`), "the MODE variable only")
		assert.Contains(t, seeder, "name: "+releaseName+"-inventory-boot-firmware", "the boot firmware annotation's policy")
		assert.Equal(t, seeder, strings.Replace(hardware, `value: "hardware"`, `value: "seeder"`, 1), "with %v", extra)
	}
}
