package bootendpoint

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

const (
	claimMAC  = "0c:c4:7a:29:00:01"
	claimUUID = "4C4C4544-0042-3510-8052-B4C04F4E3332"
	joinToken = "K10-the-join-token::server:0123456789"
)

var testKey = bytes.Repeat([]byte{7}, KeySize)

// claims is the controller side in miniature: open claims by MAC, the
// configuration holding the join token, the refusals it was told of.
type claims struct {
	mu      sync.Mutex
	open    map[string]Claim
	refused []string
	served  []string
	failing bool
	// otherNICs are another NIC's MAC of each claim, by its MAC.
	otherNICs map[string]string
	// onServed, when set, runs as a served file is told.
	onServed func()
}

func (c *claims) Open(mac string) (Claim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.open[mac]
	return cl, ok
}

func (c *claims) InstallConfig(_ context.Context, cl Claim) ([]byte, error) {
	if c.failing {
		return nil, errors.New("join token Secret not read yet")
	}
	return []byte("#cloud-config\nscheme_version: 1\ntoken: " + joinToken + "\nos:\n  hostname: " + cl.Instance + "\n"), nil
}

func (c *claims) Refused(mac, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = append(c.refused, mac+" "+reason)
}

func (c *claims) Served(cl Claim, file string) {
	if c.onServed != nil {
		c.onServed()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.served = append(c.served, cl.MAC+" "+file)
}

func (c *claims) OtherNIC(mac string) (Claim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.open {
		if c.otherNICs[cl.MAC] == mac {
			return cl, true
		}
	}
	return Claim{}, false
}

func (c *claims) close(mac string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.open, mac)
}

func newClaims(uuid string) *claims {
	return &claims{open: map[string]Claim{claimMAC: {
		ID: "6f1c0d55-8e43-4f0e-9a57-1f1f7a8b0c01", Instance: "pool-a-x7k2p", Server: "rack1-u07",
		MAC: claimMAC, SystemUUID: uuid, Arch: "arm64", Version: "v1.5.0",
	}}}
}

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

// configURL is the config_url of a script.
func configURL(t *testing.T, script string) string {
	t.Helper()
	u := joinagent.ConfigURL(strings.Fields(script))
	if u == "" {
		t.Fatalf("no config_url in\n%s", script)
	}
	return u
}

// The happy path: the chain URL as iPXE fills it in (any of its MAC forms,
// the UUID in either case) answers the arm64 installer of the claim's
// version, whose config_url carries the claim's nonce; that URL answers
// the configuration, with no cache allowed to keep it.
func TestServesTheClaimedServer(t *testing.T) {
	c := newClaims(claimUUID)
	h := NewHandler(testKey, c, WithBaseURL("http://10.1.0.2:8081/"), WithArtifactsMirror("http://10.1.0.5/harvester"))
	nonce := Nonce(testKey, "6f1c0d55-8e43-4f0e-9a57-1f1f7a8b0c01")
	for _, mac := range []string{"0c:c4:7a:29:00:01", "0C%3AC4%3A7A%3A29%3A00%3A01", "0c-c4-7a-29-00-01", "0cc47a290001", "0CC47A290001"} {
		code, script := get(t, h, "/boot/ipxe?mac="+mac+"&uuid="+strings.ToLower(claimUUID))
		require.Equal(t, http.StatusOK, code, mac)
		assert.Contains(t, script, "kernel http://10.1.0.5/harvester/v1.5.0/harvester-v1.5.0-vmlinuz-arm64 ", mac)
		assert.Equal(t, "http://10.1.0.2:8081/boot/"+nonce+"/config.yaml?mac="+claimMAC, configURL(t, script), mac)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boot/"+nonce+"/config.yaml?mac="+claimMAC, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), joinToken)
	assert.Contains(t, rec.Body.String(), "hostname: pool-a-x7k2p")
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Empty(t, c.refused)
}

// Without WithBaseURL the script names the host the request came to.
func TestConfigURLFollowsTheRequest(t *testing.T) {
	h := NewHandler(testKey, newClaims(""))
	req := httptest.NewRequest(http.MethodGet, "/boot/ipxe?mac="+claimMAC+"&uuid=", nil)
	req.Host = "192.168.10.4:8081"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.True(t, strings.HasPrefix(configURL(t, rec.Body.String()), "http://192.168.10.4:8081/boot/"), rec.Body.String())
}

// Every refusal is a 404 that holds nothing of the claim, is counted by
// its reason, and is told to Claims when the request named a MAC.
func TestRefusals(t *testing.T) {
	nonce := Nonce(testKey, "6f1c0d55-8e43-4f0e-9a57-1f1f7a8b0c01")
	otherNonce := Nonce(testKey, "an-older-claim")
	tests := []struct {
		name, url, uuid string
		reason          string
		// toldMAC is the MAC Claims.Refused hears of, "" for none.
		toldMAC string
	}{
		{name: "unclaimed MAC", url: "/boot/ipxe?mac=0c:c4:7a:29:00:02&uuid=" + claimUUID, uuid: claimUUID, reason: "BootNoOpenClaim", toldMAC: "0c:c4:7a:29:00:02"},
		{name: "no MAC", url: "/boot/ipxe?uuid=" + claimUUID, uuid: claimUUID, reason: "BootInvalidMAC"},
		{name: "MAC unreadable", url: "/boot/ipxe?mac=0c:c4:7a:29:00", uuid: claimUUID, reason: "BootInvalidMAC"},
		{name: "MAC of eight bytes", url: "/boot/ipxe?mac=0c:c4:7a:29:00:01:00:00", uuid: claimUUID, reason: "BootInvalidMAC"},
		{name: "another UUID", url: "/boot/ipxe?mac=" + claimMAC + "&uuid=4c4c4544-0042-3510-8052-b4c04f4e3333", uuid: claimUUID, reason: "BootUUIDMismatch", toldMAC: claimMAC},
		{name: "no UUID where the BMC gave one", url: "/boot/ipxe?mac=" + claimMAC, uuid: claimUUID, reason: "BootUUIDMismatch", toldMAC: claimMAC},
		{name: "config of an unclaimed MAC, right nonce", url: "/boot/" + nonce + "/config.yaml?mac=0c:c4:7a:29:00:02", uuid: claimUUID, reason: "BootNoOpenClaim", toldMAC: "0c:c4:7a:29:00:02"},
		{name: "config with another claim's nonce", url: "/boot/" + otherNonce + "/config.yaml?mac=" + claimMAC, uuid: claimUUID, reason: "BootNonceMismatch", toldMAC: claimMAC},
		{name: "config with a made-up nonce", url: "/boot/AAAA/config.yaml?mac=" + claimMAC, uuid: claimUUID, reason: "BootNonceMismatch", toldMAC: claimMAC},
		{name: "config without MAC", url: "/boot/" + nonce + "/config.yaml", uuid: claimUUID, reason: "BootInvalidMAC"},
		{name: "unknown path", url: "/boot/" + nonce + "/secrets", uuid: claimUUID, reason: "BootUnknownPath"},
		{name: "the Equinix scripts are not here", url: "/ipxe/shell.ipxe", uuid: claimUUID, reason: "BootUnknownPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClaims(tt.uuid)
			h := NewHandler(testKey, c)
			before := testutil.ToFloat64(metrics.BootRefused.WithLabelValues(tt.reason))
			code, body := get(t, h, tt.url)
			assert.Equal(t, http.StatusNotFound, code)
			assert.NotContains(t, body, joinToken)
			assert.NotContains(t, body, nonce)
			assert.NotContains(t, body, "#!ipxe")
			assert.Equal(t, before+1, testutil.ToFloat64(metrics.BootRefused.WithLabelValues(tt.reason)), "counted as %s", tt.reason)
			if tt.toldMAC == "" {
				assert.Empty(t, c.refused)
			} else {
				assert.Equal(t, []string{tt.toldMAC + " " + tt.reason}, c.refused)
			}
		})
	}
}

// Once the claim closed (the Node joined, or the Instance let the server
// go), neither URL answers, although both were right a moment before; a
// new claim of the same server has a new nonce, and the old URL stays dead.
func TestNothingAfterTheClaimClosed(t *testing.T) {
	c := newClaims("")
	h := NewHandler(testKey, c)
	code, script := get(t, h, "/boot/ipxe?mac="+claimMAC)
	require.Equal(t, http.StatusOK, code)
	cfgPath := strings.TrimPrefix(configURL(t, script), "http://example.com")
	code, _ = get(t, h, cfgPath)
	require.Equal(t, http.StatusOK, code)

	c.close(claimMAC)
	code, _ = get(t, h, "/boot/ipxe?mac="+claimMAC)
	assert.Equal(t, http.StatusNotFound, code)
	code, body := get(t, h, cfgPath)
	assert.Equal(t, http.StatusNotFound, code)
	assert.NotContains(t, body, joinToken)

	c.open[claimMAC] = Claim{ID: "a-new-instance-uid", Instance: "pool-a-m3n8q", MAC: claimMAC, Version: "v1.5.0"}
	code, _ = get(t, h, cfgPath)
	assert.Equal(t, http.StatusNotFound, code, "the old claim's URL")
	assert.Equal(t, []string{claimMAC + " BootNoOpenClaim", claimMAC + " BootNoOpenClaim", claimMAC + " BootNonceMismatch"}, c.refused)
}

// A claim that cannot be installed (an architecture Harvester has no
// release for) serves nothing; a configuration that cannot be built now
// is 503, not a refusal, and the installer may ask again.
func TestClaimThatCannotBeServed(t *testing.T) {
	c := newClaims("")
	cl := c.open[claimMAC]
	cl.Arch = "riscv64"
	c.open[claimMAC] = cl
	h := NewHandler(testKey, c)
	code, _ := get(t, h, "/boot/ipxe?mac="+claimMAC)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, []string{claimMAC + " BootScriptFailed"}, c.refused)

	c = newClaims("")
	c.failing = true
	h = NewHandler(testKey, c)
	code, body := get(t, h, "/boot/"+Nonce(testKey, c.open[claimMAC].ID)+"/config.yaml?mac="+claimMAC)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.NotContains(t, body, "Secret")
	assert.Empty(t, c.refused)
}

// No log line holds a nonce or anything of the configuration, whatever
// was asked.
func TestLogsHoldNoSecret(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	c := newClaims(claimUUID)
	h := NewHandler(testKey, c, WithLog(log))
	nonce := Nonce(testKey, c.open[claimMAC].ID)
	for _, u := range []string{
		"/boot/ipxe?mac=" + claimMAC + "&uuid=" + claimUUID,
		"/boot/ipxe?mac=" + claimMAC + "&uuid=wrong",
		"/boot/" + nonce + "/config.yaml?mac=" + claimMAC,
		"/boot/" + nonce + "x/config.yaml?mac=" + claimMAC,
		"/boot/" + nonce + "/config.yaml?mac=0c:c4:7a:29:00:09",
	} {
		get(t, h, u)
	}
	c.failing = true
	get(t, h, "/boot/"+nonce+"/config.yaml?mac="+claimMAC)
	require.NotEmpty(t, hook.AllEntries())
	for _, e := range hook.AllEntries() {
		line, err := e.String()
		require.NoError(t, err)
		assert.NotContains(t, line, nonce[:12])
		assert.NotContains(t, line, joinToken)
	}
}

// Each file served under a claim is told to Claims, in order, so that the
// Instance can show the step; a refused request tells nothing served.
func TestServedFilesAreTold(t *testing.T) {
	c := newClaims("")
	h := NewHandler(testKey, c)
	code, script := get(t, h, "/boot/ipxe?mac="+claimMAC)
	require.Equal(t, http.StatusOK, code)
	get(t, h, "/boot/AAAA/config.yaml?mac="+claimMAC)
	code, _ = get(t, h, strings.TrimPrefix(configURL(t, script), "http://example.com"))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, []string{claimMAC + " " + FileScript, claimMAC + " " + FileConfig}, c.served)
}

// The server has its whole answer before the step is told: telling it
// writes the Instance's status, which may wait, and the server's boot must
// not wait with it.
func TestAnswerIsSentBeforeTheStepIsTold(t *testing.T) {
	c := newClaims("")
	h := NewHandler(testKey, c)
	rec := httptest.NewRecorder()
	var flushed []bool
	c.onServed = func() { flushed = append(flushed, rec.Flushed) }
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boot/ipxe?mac="+claimMAC, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, []bool{true}, flushed, "the script was flushed before Served")
	assert.Equal(t, strconv.Itoa(rec.Body.Len()), rec.Header().Get("Content-Length"))
}

// A request naming another NIC of a claimed server is refused as such:
// counted and told as BootOtherNIC, logged at info level naming the server
// and its management MAC, and answered with a sentence that says why.
func TestAnotherNICOfAClaimedServerIsNamed(t *testing.T) {
	const other = "0c:c4:7a:29:00:99"
	log, hook := logtest.NewNullLogger()
	c := newClaims("")
	c.otherNICs = map[string]string{claimMAC: other}
	h := NewHandler(testKey, c, WithLog(log))
	before := testutil.ToFloat64(metrics.BootRefused.WithLabelValues("BootOtherNIC"))
	code, body := get(t, h, "/boot/ipxe?mac="+other)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "not the management NIC")
	assert.Equal(t, before+1, testutil.ToFloat64(metrics.BootRefused.WithLabelValues("BootOtherNIC")))
	assert.Equal(t, []string{other + " BootOtherNIC"}, c.refused)
	assert.Empty(t, c.served)
	require.NotNil(t, hook.LastEntry())
	assert.Equal(t, logrus.InfoLevel, hook.LastEntry().Level)
	assert.Contains(t, hook.LastEntry().Message, "rack1-u07")
	assert.Contains(t, hook.LastEntry().Message, claimMAC)
}
