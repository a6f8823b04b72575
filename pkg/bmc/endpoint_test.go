package bmc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

func TestEndpointValidate(t *testing.T) {
	ok := Endpoint{Protocol: ProtocolRedfish, Host: "10.0.0.5", Username: "root", Password: "pw"}
	tests := []struct {
		name string
		edit func(*Endpoint)
		want string // "" means valid
	}{
		{"valid", func(*Endpoint) {}, ""},
		{"no protocol", func(e *Endpoint) { e.Protocol = "" }, "protocol is empty"},
		{"unknown protocol", func(e *Endpoint) { e.Protocol = "ssh" }, "unknown protocol"},
		{"no host", func(e *Endpoint) { e.Host = "" }, "host is empty"},
		{"URL as host", func(e *Endpoint) { e.Host = "https://10.0.0.5" }, "without scheme"},
		{"port in host", func(e *Endpoint) { e.Host = "10.0.0.5:443" }, "port field"},
		{"IPv6 host", func(e *Endpoint) { e.Host = "fd00::5" }, ""},
		{"port out of range", func(e *Endpoint) { e.Port = 70000 }, "out of range"},
		{"no user", func(e *Endpoint) { e.Username = "" }, "username is empty"},
		{"negative timeout", func(e *Endpoint) { e.Timeout = -1 }, "negative"},
		{"system of a chassis", func(e *Endpoint) { e.SystemID = "System.Embedded.2" }, ""},
		{"system as a path", func(e *Endpoint) { e.SystemID = "/redfish/v1/Systems/1" }, "not a path"},
		{"system over IPMI", func(e *Endpoint) { e.Protocol, e.SystemID = ProtocolIPMI, "1" }, "for Redfish"},
		{"bundle and insecure", func(e *Endpoint) { e.InsecureSkipVerify, e.CABundle = true, []byte("x") }, "choose one"},
		{"bundle without PEM", func(e *Endpoint) { e.CABundle = []byte("not pem") }, "no PEM certificate"},
		{"IPMI password too long", func(e *Endpoint) { e.Protocol, e.Password = ProtocolIPMI, redact.Sensitive(strings.Repeat("p", 21)) }, "at most 20 bytes"},
		{"IPMI user too long", func(e *Endpoint) { e.Protocol, e.Username = ProtocolIPMI, strings.Repeat("u", 17) }, "at most 16 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := ok
			tt.edit(&ep)
			err := ep.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
			assert.Equal(t, failure.Invalid, failure.ClassOf(err))
		})
	}
}

func TestEndpointNeverPrintsPassword(t *testing.T) {
	ep := Endpoint{Protocol: ProtocolIPMI, Host: "10.0.0.5", Username: "root", Password: "hunter2-secret"}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		assert.NotContains(t, fmt.Sprintf(f, ep), "hunter2", f)
		assert.NotContains(t, fmt.Sprintf(f, &ep), "hunter2", f)
		assert.NotContains(t, fmt.Sprintf(f, ep.Password), "hunter2", f)
	}
	assert.Equal(t, "ipmi://root@10.0.0.5:623", ep.String())
	assert.Equal(t, "", redact.Sensitive("").String())
	b, _ := redact.Sensitive("x").MarshalText()
	assert.Equal(t, "<redacted>", string(b))
}

func TestNewErrorScrubsPassword(t *testing.T) {
	ep := Endpoint{Protocol: ProtocolRedfish, Host: "h", Username: "u", Password: "pw-123456"}
	cause := errors.New("server said: bad password pw-123456")
	e := newError("Dial", ep, failure.Unauthorized, cause.Error(), cause)
	assert.NotContains(t, e.Error(), "pw-123456")
	assert.Nil(t, e.Err, "a cause holding the password is dropped, so Unwrap cannot leak it")
	clean := errors.New("refused")
	assert.Equal(t, clean, newError("Dial", ep, failure.Unreachable, "x", clean).Unwrap())
}

func TestClassifyNet(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	timeout := &net.OpError{Op: "read", Net: "udp", Err: os.ErrDeadlineExceeded}
	dns := &net.DNSError{Err: "no such host", Name: "bmc.invalid", IsNotFound: true}
	tests := []struct {
		err       error
		connected bool
		want      failure.Class
	}{
		{refused, false, failure.Unreachable},
		{refused, true, failure.Unreachable},
		{timeout, false, failure.Unreachable},
		{timeout, true, failure.Transient},
		{dns, false, failure.Unreachable},
		{fmt.Errorf("wrapped: %w", timeout), true, failure.Transient},
	}
	for _, tt := range tests {
		class, _, ok := classifyNet(tt.err, tt.connected)
		assert.True(t, ok, "%v", tt.err)
		assert.Equal(t, tt.want, class, "%v connected=%v", tt.err, tt.connected)
	}
	_, _, ok := classifyNet(errors.New("something else"), true)
	assert.False(t, ok)
}

func TestWorse(t *testing.T) {
	assert.Equal(t, StateCritical, Worse(StateWarning, StateCritical))
	assert.Equal(t, StateWarning, Worse(StateWarning, StateUnknown))
	assert.Equal(t, StateUnknown, Worse(StateOK, StateUnknown))
	assert.Equal(t, StateUnknown, worstOf(StateUnknown, []SubsystemHealth{{State: StateUnknown}}))
	assert.Equal(t, StateWarning, worstOf(StateUnknown, []SubsystemHealth{{State: StateOK}, {State: StateWarning}, {State: StateUnknown}}))
	assert.Equal(t, SubsystemHealth{Subsystem: SubsystemFans, State: StateUnknown, Message: notReported}, Health{}.Get(SubsystemFans))
}
