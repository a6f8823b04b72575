package instance

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Pools create Instances with the finalizer wrangler stores for the remove
// handler; if the two drifted apart, every Instance would carry one that no
// handler removes.
func TestPoolsStoreTheRemoveHandlersFinalizer(t *testing.T) {
	assert.Equal(t, "wrangler.cattle.io/"+HandlerRemove, Finalizer)
}
