package vmrig

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

const (
	vmMAC  = "52:54:00:29:00:01"
	vmUUID = "2b3f8c4e-9a1d-4e6b-8c7f-0123456789ab"
	nonce  = "n-5d1e0c"
)

// twoStages is a boot endpoint in miniature: stage 1 for anyone chains to
// stage 2 with the MAC and UUID iPXE reports and the claim's nonce; stage
// 2 answers only that MAC and nonce, and parks the machine.
func twoStages(mac string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /boot.ipxe", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("#!ipxe\nchain --autofree " + GuestURL + "/stage2.ipxe?mac=${mac:hexhyp}&uuid=${uuid}&nonce=" + nonce + "\n"))
	})
	mux.HandleFunc("GET /stage2.ipxe", func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Get("mac") != mac || q.Get("nonce") != nonce {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("#!ipxe\necho vmrig stage 2\nsleep 3600\n"))
	})
	return mux
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	require.Eventually(t, cond, within, 50*time.Millisecond, what)
	return time.Since(start)
}

// Through the project's own BMC client: a one-time network boot and a
// power on start the VM, whose real iPXE asks the test's server for its
// script and chains to stage 2 with its MAC, UUID and the nonce filled
// in; power off stops the VM; the next start, with no override, boots
// the disk and asks for nothing.
func TestOneTimeNetworkBootThroughTheBMC(t *testing.T) {
	ctx := context.Background()
	m := Require(t, Options{MAC: vmMAC, UUID: vmUUID, Handler: twoStages("52-54-00-29-00-01")})
	c, err := bmc.Dial(ctx, m.Endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	inv, err := c.Inventory(ctx)
	require.NoError(t, err)
	assert.Equal(t, vmUUID, inv.SystemUUID, "the BMC reports the UUID the VM's firmware has")
	st, err := c.PowerState(ctx)
	require.NoError(t, err)
	require.Equal(t, bmc.PowerOff, st)

	_, err = c.BootOnce(ctx, bmc.BootNetwork, bmc.BootFirmwareLegacy)
	require.NoError(t, err)
	on := time.Now()
	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))
	waitFor(t, "stage 2 requested", 90*time.Second, func() bool { return len(m.Requests()) >= 2 })
	reqs := m.Requests()
	cpu := m.CPU()
	require.Len(t, reqs, 2, "%+v", reqs)
	assert.Equal(t, "/boot.ipxe", reqs[0].URL())
	assert.Equal(t, "/stage2.ipxe?mac=52-54-00-29-00-01&uuid="+vmUUID+"&nonce="+nonce, reqs[1].URL())
	for _, r := range reqs {
		assert.Equal(t, http.StatusOK, r.Status, r.URL())
		assert.True(t, strings.HasPrefix(r.UserAgent, "iPXE/"), r.UserAgent)
	}
	t.Logf("power on -> first iPXE request %v, -> stage 2 %v; QEMU CPU until then %v",
		reqs[0].At.Sub(on).Round(time.Millisecond), reqs[1].At.Sub(on).Round(time.Millisecond), cpu)
	starts := m.BMC.PowerTransitions()
	require.NotEmpty(t, starts)
	assert.True(t, starts[len(starts)-1].NetworkBoot(), "%+v", starts)

	pid := m.HostPID()
	require.NotZero(t, pid)
	off := time.Now()
	require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
	// HostPID reads 0 once the process of that start has exited.
	took := waitFor(t, "the VM stops", 30*time.Second, func() bool { return m.HostPID() == 0 })
	st, err = c.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, bmc.PowerOff, st)
	t.Logf("power off -> VM gone %v", max(took, time.Since(off)).Round(time.Millisecond))

	// No override: the VM boots its (absent) disk, SeaBIOS gives up, and
	// not a request comes.
	seen := len(m.Serial())
	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))
	waitFor(t, "SeaBIOS finds nothing to boot", 60*time.Second, func() bool {
		return strings.Contains(m.Serial()[seen:], "No bootable device")
	})
	assert.Len(t, m.Requests(), 2, "no request without the override")
	starts = m.BMC.PowerTransitions()
	assert.Equal(t, bmcsim.BootNone, starts[len(starts)-1].Boot)
	require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
	waitFor(t, "the VM stops", 30*time.Second, func() bool { return m.HostPID() == 0 })
}
