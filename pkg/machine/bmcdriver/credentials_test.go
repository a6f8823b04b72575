package bmcdriver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// secret stands for the Secret a caller reads the credentials from,
// counting its reads.
type secret struct {
	pass  string
	err   error
	reads int
}

func (s *secret) credentials() (string, redact.Sensitive, error) {
	s.reads++
	return user, redact.Sensitive(s.pass), s.err
}

// passes returns a pass over b's BMC at *now, whose endpoint has no
// credentials of its own: sec gives them.
func passes(d *Driver, b bmcUnderTest, sec *secret, spread bool, now *time.Time) func() *Machine {
	bare := b.ep
	bare.Username, bare.Password = "", ""
	return func() *Machine {
		return d.Machine(bare, MachineOptions{Owner: "o", Key: "uid-1", Interval: time.Hour, Spread: spread,
			Credentials: sec.credentials, Now: func() time.Time { return *now }})
	}
}

// The credentials are read only by a pass that asks the BMC something,
// once whatever it asks: a pass between two polls, with the facts
// remembered, reads none.
func TestCredentialsReadWhenTheBMCIsAsked(t *testing.T) {
	b := redfish(t)
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	now := time.Unix(1_800_000_000, 0)
	sec := &secret{pass: password}
	pass := passes(d, b, sec, true, &now)

	m := pass()
	assert.True(t, m.ReadsDue(), "the first poll")
	assert.Zero(t, sec.reads, "asking what is due reads nothing")
	_, err := m.Events(ctx, "")
	require.NoError(t, err)
	_, err = m.Facts(ctx)
	require.NoError(t, err)
	_, err = m.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, sec.reads, "one read per pass")
	m.Release(0)

	now = now.Add(time.Minute)
	m = pass()
	assert.False(t, m.ReadsDue(), "no poll due, facts remembered")
	batch, err := m.Events(ctx, "")
	require.NoError(t, err)
	assert.Positive(t, batch.RecheckAfter)
	f, err := m.Facts(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, f.Manufacturer)
	m.Release(0)
	assert.Equal(t, 1, sec.reads, "a pass with nothing for the BMC reads no credentials")

	m = pass()
	_, err = m.PowerState(ctx)
	require.NoError(t, err, "a power reading is the BMC's at any time")
	assert.Equal(t, 2, sec.reads)
	m.Release(0)

	// Credentials that cannot be read fail the call, as a login not
	// tried: nothing was sent, and it is no news of the BMC.
	sec.err = errors.New("Secret bmc/o not found")
	m = pass()
	err = m.Power(ctx, machine.ActionOff)
	require.Error(t, err)
	assert.False(t, machine.MaybeApplied(err))
	assert.Contains(t, failure.Message(err), "Secret bmc/o not found")
	assert.Nil(t, m.Observed().Problem)
	assert.Equal(t, machine.Link{}, m.Link())
	m.Release(0)
}

// A hold on refused credentials is checked against the pass's own, read
// for it: changed ones lift it at once; the same ones, or none readable,
// keep the BMC from any login.
func TestRefusalHoldReadsTheCredentials(t *testing.T) {
	b := redfish(t)
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	now := time.Unix(1_800_000_000, 0)
	sec := &secret{pass: "wrong"}
	pass := passes(d, b, sec, false, &now)
	m := pass()
	_, err := m.Events(ctx, "")
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
	m.Hold(now.Add(time.Minute))
	m.Release(0)

	m = pass()
	assert.False(t, m.ReadsDue(), "held for the credentials it refused")
	assert.Equal(t, 2, sec.reads, "the hold's check reads them")
	m.Release(0)

	sec.err = errors.New("Secret bmc/o not found")
	m = pass()
	assert.False(t, m.ReadsDue(), "credentials that cannot be read keep the hold")
	m.Release(0)

	sec.pass, sec.err = password, nil
	m = pass()
	assert.True(t, m.ReadsDue(), "changed credentials lift the hold")
	_, err = m.Events(ctx, "")
	require.NoError(t, err)
	m.Release(0)
}
