package machine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestClassesSayWhetherAPowerCallMayHaveLanded(t *testing.T) {
	wrapped := fmt.Errorf("powering off: %w", &Error{Op: "Power", Class: ClassThrottled, RetryAfter: 3 * time.Second, Message: "slow down"})
	assert.Equal(t, ClassThrottled, ClassOf(wrapped))
	assert.False(t, MaybeApplied(wrapped))
	assert.Equal(t, 3*time.Second, RetryAfter(wrapped))
	assert.Equal(t, "slow down", Message(wrapped))
	assert.Equal(t, "hardware Power: Throttled: slow down", errors.Unwrap(wrapped).Error())

	for _, c := range []Class{ClassBusy, ClassRefused, ClassUnauthorized, ClassNotFound} {
		assert.False(t, MaybeApplied(&Error{Class: c}), c.String())
	}
	for _, c := range []Class{ClassUnknown, ClassUnavailable} {
		assert.True(t, MaybeApplied(&Error{Class: c}), c.String())
	}
	assert.True(t, MaybeApplied(errors.New("eof")))
	assert.False(t, MaybeApplied(nil))
	assert.Equal(t, ClassUnavailable, ClassOf(fmt.Errorf("x: %w", context.DeadlineExceeded)))
	assert.Equal(t, "Class(42)", Class(42).String())
	assert.Equal(t, "plain", Message(errors.New("plain")))
}
