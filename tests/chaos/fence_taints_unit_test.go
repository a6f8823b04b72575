package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A watch that delivers one node's untaint after another node's later
// taint saw both at once; the apiserver never held them so.
func TestTaintHistoryJudgesTheApiserversOrder(t *testing.T) {
	at := time.Date(2026, 11, 27, 6, 11, 44, 0, time.UTC)
	h := newTaintHistory()
	h.observe("pfence-2", true, 3930, at)
	h.observe("pfence-1", true, 4040, at.Add(time.Second))
	h.observe("pfence-2", false, 3980, at.Add(2*time.Second))
	most, first := h.held(1)
	assert.Equal(t, 1, most)
	assert.Empty(t, first)
	assert.Equal(t, 1, h.backwards)

	stored := newTaintHistory()
	stored.observe("pfence-2", true, 3930, time.Time{})
	stored.observe("pfence-2", false, 3980, time.Time{})
	stored.observe("pfence-1", true, 4040, time.Time{})
	assert.False(t, stored.differs(h), "the same writes, delivered in another order")
	stored.observe("pfence-1", false, 4100, time.Time{})
	assert.True(t, stored.differs(h))
}

func TestTaintHistoryFindsAnOverlap(t *testing.T) {
	at := time.Date(2026, 11, 27, 6, 11, 44, 0, time.UTC)
	h := newTaintHistory()
	h.observe("pfence-2", true, 3930, at)
	h.observe("pfence-2", true, 3935, at) // another write, still tainted
	h.observe("pfence-1", true, 4040, at.Add(time.Second))
	h.observe("pfence-2", false, 4050, at.Add(2*time.Second))
	h.observe("pfence-1", false, 4060, at.Add(3*time.Second))
	h.observe("pfence-3", true, 4070, at.Add(4*time.Second))
	most, first := h.held(1)
	assert.Equal(t, 2, most)
	assert.Equal(t, "pfence-1 on at rv 4040 (06:11:45.000), off at rv 4060 (06:11:47.000); "+
		"pfence-2 on at rv 3930 (06:11:44.000), off at rv 4050 (06:11:46.000)", first)
	assert.Contains(t, h.trace(), "pfence-3 on at rv 4070 (06:11:48.000), still on")
}
