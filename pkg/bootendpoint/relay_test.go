package bootendpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// heldBy is a lease renewed just now by holder.
func heldBy(holder string) *coordinationv1.Lease {
	seconds, now := int32(30), metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now}}
}

func refused(reason string) float64 {
	return testutil.ToFloat64(metrics.BootRefused.WithLabelValues(reason))
}

func TestAStandbyForwardsToTheLeader(t *testing.T) {
	var got atomic.Pointer[http.Request]
	var body atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		body.Store(n)
		got.Store(r)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "the leader's answer")
	}))
	defer leader.Close()
	leaderID := LeaderIdentity("a", 1, strings.TrimPrefix(leader.URL, "http://"))
	relay := NewRelay(LeaderIdentity("b", 2, "127.0.0.1:1"), func(context.Context) (*coordinationv1.Lease, error) { return heldBy(leaderID), nil })

	req := httptest.NewRequest(http.MethodGet, "http://ipxe.example:8081/boot/ipxe?mac=0c:c4:7a:29:00:01&uuid=x", strings.NewReader("ignored"))
	req.RemoteAddr = "192.0.2.7:68"
	w := httptest.NewRecorder()
	relay.ServeHTTP(w, req)

	assert.Equal(t, http.StatusTeapot, w.Code)
	assert.Equal(t, "the leader's answer", w.Body.String())
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	r := got.Load()
	require.NotNil(t, r, "the leader was not asked")
	assert.Equal(t, http.MethodGet, r.Method)
	assert.Equal(t, "/boot/ipxe", r.URL.Path)
	assert.Equal(t, "mac=0c:c4:7a:29:00:01&uuid=x", r.URL.RawQuery)
	assert.Equal(t, "ipxe.example:8081", r.Host, "the leader builds its URLs from the Host the server asked")
	assert.Equal(t, "192.0.2.7", r.Header.Get("X-Forwarded-For"))
	assert.Zero(t, body.Load(), "no body is forwarded")
}

func TestAStandbyWithoutALeaderAnswers503(t *testing.T) {
	self := LeaderIdentity("b", 2, "127.0.0.1:1")
	for name, lease := range map[string]*coordinationv1.Lease{
		"no holder":    heldBy(""),
		"itself":       heldBy(self),
		"no address":   heldBy("a_1"),
		"a loop to it": heldBy(LeaderIdentity("b", 3, "127.0.0.1:1")),
	} {
		relay := NewRelay(self, func(context.Context) (*coordinationv1.Lease, error) { return lease, nil })
		before := refused(equinixv1.ReasonBootNoLeader)
		w := httptest.NewRecorder()
		relay.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boot/ipxe?mac=0c:c4:7a:29:00:01", nil))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code, name)
		assert.Equal(t, before+1, refused(equinixv1.ReasonBootNoLeader), name)
	}
}

func TestAForwardedRequestIsNeverForwardedAgain(t *testing.T) {
	var asked atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { asked.Store(true) }))
	defer other.Close()
	relay := NewRelay(LeaderIdentity("b", 2, "127.0.0.1:1"), func(context.Context) (*coordinationv1.Lease, error) {
		return heldBy(LeaderIdentity("a", 1, strings.TrimPrefix(other.URL, "http://"))), nil
	})
	req := httptest.NewRequest(http.MethodGet, "/boot/ipxe?mac=0c:c4:7a:29:00:01", nil)
	req.Header.Set(relayedHeader, "1")
	w := httptest.NewRecorder()
	relay.ServeHTTP(w, req)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.False(t, asked.Load())
}

func TestAnUnreachableLeaderIs502(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(gone.URL, "http://")
	gone.Close()
	relay := NewRelay(LeaderIdentity("b", 2, "127.0.0.1:1"), func(context.Context) (*coordinationv1.Lease, error) {
		return heldBy(LeaderIdentity("a", 1, addr)), nil
	})
	before := refused(equinixv1.ReasonBootLeaderUnreachable)
	w := httptest.NewRecorder()
	relay.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boot/secret-nonce/config.yaml?mac=0c:c4:7a:29:00:01", nil))
	assert.Equal(t, http.StatusBadGateway, w.Code)
	assert.NotContains(t, w.Body.String(), "secret-nonce")
	assert.Equal(t, before+1, refused(equinixv1.ReasonBootLeaderUnreachable))
}

func TestTheLeaderAnswersItselfWhileItServes(t *testing.T) {
	relay := NewRelay(LeaderIdentity("a", 1, "127.0.0.1:1"), nil)
	w := httptest.NewRecorder()
	relay.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boot/ipxe", nil))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, "not serving yet")

	ctx, stop := context.WithCancel(context.Background())
	relay.Serve(ctx, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	w = httptest.NewRecorder()
	relay.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boot/ipxe", nil))
	assert.Equal(t, http.StatusNoContent, w.Code)

	stop()
	assert.Eventually(t, func() bool {
		w := httptest.NewRecorder()
		relay.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boot/ipxe", nil))
		return w.Code == http.StatusServiceUnavailable
	}, 5*time.Second, 10*time.Millisecond, "a leader that stopped serving still answers")
}
