package failure

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestErrorText(t *testing.T) {
	assert.Equal(t, "metal DeleteDevice: 422 Busy: Cannot delete a device while it is provisioning",
		(&Error{Seam: "metal", Op: "DeleteDevice", StatusCode: 422, Class: Busy, Message: "Cannot delete a device while it is provisioning"}).Error())
	assert.Equal(t, "metal GetDevice: Throttled (retry after 2s)",
		(&Error{Seam: "metal", Op: "GetDevice", Class: Throttled, RetryAfter: 1500 * time.Millisecond}).Error())
	assert.Equal(t, "bmc Power redfish://root@10.0.0.5:443: Unauthorized: the BMC refused the credentials",
		(&Error{Seam: "bmc", Op: "Power", Endpoint: "redfish://root@10.0.0.5:443", Class: Unauthorized, Message: "the BMC refused the credentials"}).Error())
}

func TestClassOfAndTheRest(t *testing.T) {
	inner := &Error{Seam: "metal", Op: "GetDevice", Class: Forbidden, RetryAfter: 7 * time.Second, Message: "forbidden"}
	outer := fmt.Errorf("reading power: %w", &Error{Seam: "machine", Op: "PowerState", Class: Unauthorized, Message: "refused", Err: inner})
	assert.Equal(t, Unauthorized, ClassOf(outer), "the outermost class is the caller's")
	assert.Equal(t, "refused", Message(outer))
	assert.Same(t, inner, From(outer, "metal"))
	assert.Nil(t, From(outer, "bmc"))
	assert.Nil(t, From(errors.New("plain"), "metal"))
	assert.Zero(t, RetryAfter(outer))
	assert.Equal(t, 7*time.Second, RetryAfter(inner))

	assert.Equal(t, Unknown, ClassOf(nil))
	assert.Equal(t, Unknown, ClassOf(errors.New("boom")))
	assert.Equal(t, Transient, ClassOf(fmt.Errorf("x: %w", context.DeadlineExceeded)))
	assert.Equal(t, Transient, ClassOf(context.Canceled))
	assert.Equal(t, "plain", Message(errors.New("plain")))
	assert.ErrorIs(t, &Error{Err: context.Canceled}, context.Canceled)
}

func TestSlowDown(t *testing.T) {
	const fallback = 5 * time.Second
	cases := []struct {
		name string
		err  error
		wait time.Duration
		ok   bool
	}{
		{"throttled with its own wait", &Error{Class: Throttled, RetryAfter: time.Minute}, time.Minute, true},
		{"throttled without", &Error{Class: Throttled}, fallback, true},
		{"busy", &Error{Class: Busy, RetryAfter: time.Hour}, fallback, true},
		{"refused", &Error{Class: Forbidden}, 0, false},
		{"not classified", errors.New("boom"), 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wait, ok := SlowDown(c.err, fallback)
			assert.Equal(t, c.wait, wait)
			assert.Equal(t, c.ok, ok)
		})
	}
}
