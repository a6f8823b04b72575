package equinixmetal

import (
	"testing"

	"github.com/stretchr/testify/assert"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// Pools create Instances with the finalizer wrangler stores for the remove
// handler; if the two drifted apart, every Instance would carry one that no
// handler removes.
func TestPoolsStoreTheRemoveHandlersFinalizer(t *testing.T) {
	assert.Equal(t, equinixv1.FinalizerInstance, (&Provider{}).Names().InstanceFinalizer())
}
