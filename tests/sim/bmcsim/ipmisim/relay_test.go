package ipmisim

import (
	"context"
	"testing"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The relay tells the sessions apart by the BMC's session ID and knows
// which were in use at once.
func TestRelaySessions(t *testing.T) {
	sim := Require(t, Options{Username: "admin", Password: "pw"})
	relay := RequireRelay(t, sim)
	ctx := context.Background()
	open := func() *ipmiclient.Client {
		c, err := ipmiclient.NewClient("127.0.0.1", relay.Port(), "admin", "pw")
		require.NoError(t, err)
		c.WithCipherSuiteID(types.CipherSuiteID3)
		require.NoError(t, c.Connect(ctx))
		_, err = c.GetChassisStatus(ctx)
		require.NoError(t, err)
		return c
	}
	closeQuickly := func(c *ipmiclient.Client) { _ = c.WithTimeout(100 * time.Millisecond).WithRetry(0).Close(ctx) }
	closeQuickly(open())
	closeQuickly(open())
	assert.Len(t, relay.Sessions(), 2)
	assert.Equal(t, 1, relay.MostSessions(), "one after the other")
	a, b := open(), open()
	closeQuickly(a)
	closeQuickly(b)
	assert.Equal(t, 2, relay.MostSessions(), "two at once")
	assert.Equal(t, []string{"open 3", "answer 3", "rakp1", "rakp3"}, relay.SetupLog()[:4])
}
