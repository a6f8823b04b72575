package machine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

func TestClassesSayWhetherAPowerCallMayHaveLanded(t *testing.T) {
	wrapped := fmt.Errorf("powering off: %w", &failure.Error{Seam: Seam, Op: "Power", Class: failure.Throttled, RetryAfter: 3 * time.Second, Message: "slow down"})
	assert.Equal(t, failure.Throttled, failure.ClassOf(wrapped))
	assert.False(t, MaybeApplied(wrapped))
	assert.Equal(t, 3*time.Second, failure.RetryAfter(wrapped))
	assert.Equal(t, "slow down", failure.Message(wrapped))
	assert.Equal(t, "machine Power: Throttled: slow down (retry after 3s)", errors.Unwrap(wrapped).Error())

	for _, c := range []failure.Class{failure.Busy, failure.Refused, failure.Unauthorized, failure.NotFound} {
		assert.False(t, MaybeApplied(&failure.Error{Class: c}), string(c))
	}
	for _, c := range []failure.Class{failure.Unknown, failure.Transient} {
		assert.True(t, MaybeApplied(&failure.Error{Class: c}), string(c))
	}
	assert.True(t, MaybeApplied(errors.New("eof")))
	assert.False(t, MaybeApplied(nil))
	assert.Equal(t, failure.Transient, failure.ClassOf(fmt.Errorf("x: %w", context.DeadlineExceeded)))
	assert.Equal(t, "plain", failure.Message(errors.New("plain")))
}

// Each seam's class means one thing for the chain.
func TestFromSeam(t *testing.T) {
	for seam, want := range map[failure.Class]failure.Class{
		failure.NotFound: failure.NotFound, failure.Unauthorized: failure.Unauthorized, failure.Forbidden: failure.Unauthorized,
		failure.Throttled: failure.Throttled, failure.Busy: failure.Busy, failure.Transient: failure.Transient,
		failure.Unreachable: failure.Transient, failure.Invalid: failure.Refused, failure.NoCapacity: failure.Refused,
		failure.ProtocolMismatch: failure.Refused, failure.TLS: failure.Refused, failure.Unsupported: failure.Refused,
		failure.Unknown: failure.Unknown,
	} {
		in := &failure.Error{Seam: "metal", Op: "GetDevice", Class: seam, Message: "m", RetryAfter: time.Second}
		out := FromSeam("PowerState", in)
		assert.Equal(t, want, out.Class, string(seam))
		assert.Equal(t, "m", out.Message)
		assert.Equal(t, time.Second, out.RetryAfter)
		assert.Same(t, in, failure.From(out, "metal"))
	}
	assert.Equal(t, failure.Transient, FromSeam("Power", context.Canceled).Class)
	assert.Equal(t, failure.Unknown, FromSeam("Power", errors.New("eof")).Class)
	assert.Nil(t, FromSeam("Power", nil))
}
