package bmc

import (
	"context"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// selfSignedBMC is the Redfish responder with a certificate it signed
// itself, as most BMCs ship.
func selfSignedBMC(t *testing.T) (*bmcsim.BMC, *bmcsim.Server, Endpoint) {
	t.Helper()
	sim := bmcsim.New(bmcsim.Options{Username: testUser, Password: testPassword})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, srv.SelfSigned())
	return sim, srv, Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, Username: testUser, Password: testPassword}
}

func fingerprintOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	return Fingerprint(block.Bytes)
}

// Without a CA bundle or insecureSkipVerify, a certificate that does not
// verify is refused, unless trust on first use is on: then the client
// logs in and reports the certificate, unverified, for the caller to pin.
func TestRedfishTrustOnFirstUse(t *testing.T) {
	_, srv, ep := selfSignedBMC(t)
	ctx := context.Background()
	_, err := Dial(ctx, ep)
	require.Equal(t, failure.TLS, failure.ClassOf(err), "no trust on first use: %v", err)

	ep.TrustOnFirstUse = true
	c := dial(t, ep)
	cert, ok := c.(CertificateReporter).PeerCertificate()
	require.True(t, ok)
	assert.Equal(t, fingerprintOf(t, srv.Certificate()), cert.SHA256)
	assert.False(t, cert.Verified)
	_, err = c.PowerState(ctx)
	require.NoError(t, err)
}

// A pinned certificate is trusted; another one is refused as changed,
// naming both fingerprints, before the password is sent; accepting the new
// one (pinning it too) lets the client in again.
func TestRedfishPinnedCertificate(t *testing.T) {
	sim, srv, ep := selfSignedBMC(t)
	ctx := context.Background()
	first := fingerprintOf(t, srv.Certificate())
	ep.TrustOnFirstUse, ep.PinnedCertificates = true, []string{first}
	dial(t, ep)

	require.NoError(t, srv.SelfSigned())
	second := fingerprintOf(t, srv.Certificate())
	refused := sim.Logins().Refused
	before := sim.Requests()
	_, err := Dial(ctx, ep)
	require.Equal(t, failure.TLS, failure.ClassOf(err), "%v", err)
	var changed *CertificateChangedError
	require.ErrorAs(t, err, &changed)
	assert.Equal(t, second, changed.Presented)
	assert.Equal(t, []string{first}, changed.Pinned)
	assert.Contains(t, err.Error(), "certificate changed")
	assert.Equal(t, before, sim.Requests(), "nothing reached the BMC")
	assert.Equal(t, refused, sim.Logins().Refused)

	ep.PinnedCertificates = []string{first, second}
	dial(t, ep)
}

// A CA bundle means that CA: trust on first use and pins do not apply.
func TestRedfishCABundleIsStrict(t *testing.T) {
	_, srv, ep := selfSignedBMC(t)
	other, err := bmcsim.NewServer(bmcsim.New(bmcsim.Options{Username: testUser, Password: testPassword}), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	ep.CABundle, ep.TrustOnFirstUse = other.CACertPEM, true
	_, err = Dial(context.Background(), ep)
	require.Equal(t, failure.TLS, failure.ClassOf(err), "%v", err)
	ep.CABundle = srv.CACertPEM
	c := dial(t, ep)
	cert, _ := c.(CertificateReporter).PeerCertificate()
	assert.True(t, cert.Verified, "a self-signed certificate in the bundle verifies")
}

func TestNormalizeFingerprint(t *testing.T) {
	fp := Fingerprint([]byte("der"))
	assert.Len(t, strings.Split(fp, ":"), 32)
	for _, in := range []string{fp, strings.ToLower(fp), strings.ReplaceAll(fp, ":", ""), " " + fp + " "} {
		got, ok := NormalizeFingerprint(in)
		assert.True(t, ok, in)
		assert.Equal(t, fp, got)
	}
	for _, in := range []string{"", "AB:CD", "zz" + fp[2:]} {
		_, ok := NormalizeFingerprint(in)
		assert.False(t, ok, in)
	}
}

// A poll's reads on a session: each resource once, the service root once
// for the login, and a new pass reads anew.
func TestRedfishReadsEachResourceOncePerPass(t *testing.T) {
	tg, sim, _ := redfishTarget(t)
	ctx := context.Background()
	c := dial(t, tg.ep)
	c.(PassStarter).NewPass()
	_, err := c.Health(ctx)
	require.NoError(t, err)
	_, _, err = c.LogEntries(ctx, "")
	require.NoError(t, err)
	_, err = c.PowerState(ctx)
	require.NoError(t, err)
	_, err = c.Inventory(ctx)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, r := range sim.RequestLog() {
		seen[r]++
	}
	for r, n := range seen {
		if strings.HasPrefix(r, "GET ") {
			assert.Equal(t, 1, n, "%s read %d times in one pass", r, n)
		}
	}
	before := seen["GET /redfish/v1/Systems/1"]
	c.(PassStarter).NewPass()
	_, err = c.PowerState(ctx)
	require.NoError(t, err)
	n := 0
	for _, r := range sim.RequestLog() {
		if r == "GET /redfish/v1/Systems/1" {
			n++
		}
	}
	assert.Equal(t, before+1, n, "a new pass reads the system anew")
}

// The power read at the least cost: one basic-auth GET of the system, no
// session, once the system is known; without it, a session of its own.
// A BMC that refuses basic auth but takes a session is read through a
// session, and the Memo says so for the next read.
func TestReadPowerState(t *testing.T) {
	tg, sim, _ := redfishTarget(t)
	ctx := context.Background()
	state, memo, err := ReadPowerState(ctx, tg.ep)
	require.NoError(t, err)
	assert.Equal(t, PowerOn, state)
	assert.Equal(t, "/redfish/v1/Systems/1", memo.SystemPath)
	assert.Equal(t, 1, sim.Logins().Accepted, "no system known: a session")
	assert.Equal(t, 0, sim.Sessions(), "logged out")

	ep := tg.ep
	ep.Memo = memo
	n := len(sim.RequestLog())
	require.NoError(t, sim.SetPowerState("Off"))
	state, memo, err = ReadPowerState(ctx, ep)
	require.NoError(t, err)
	assert.Equal(t, PowerOff, state)
	assert.Equal(t, []string{"GET /redfish/v1/Systems/1"}, sim.RequestLog()[n:], "one request")
	assert.Equal(t, 1, sim.Logins().Accepted, "no session")
	assert.False(t, memo.SessionsOnly)

	ep.Password = "wrong"
	_, _, err = ReadPowerState(ctx, ep)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err), "%v", err)
}
