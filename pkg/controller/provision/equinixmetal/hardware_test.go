package equinixmetal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOffMapsZeroOntoTheDriversOff(t *testing.T) {
	assert.Equal(t, time.Duration(-1), off(0))
	assert.Equal(t, time.Minute, off(time.Minute))
}
