package bootendpoint

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	coordinationv1 "k8s.io/api/coordination/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// relayedHeader marks a request a standby forwarded: a replica that gets
// one and does not serve the endpoint itself answers 503 rather than
// forwarding it again, so a stale view of the Lease can never make a loop.
const relayedHeader = "X-Equinix-Addon-Relayed"

// leaseCacheFor is how long a read of the leader Lease answers later
// requests: a PXE boot makes a few requests in a row, and a handover is
// seen at most this much later.
const leaseCacheFor = time.Second

// LeaderLease reads the leader Lease.
type LeaderLease func(ctx context.Context) (*coordinationv1.Lease, error)

// Relay is the boot endpoint on every replica's listener. The leader's
// own handler answers while it has one (Serve); any other replica
// forwards the request to the leader named in the leader Lease, and
// answers 503 when there is none it can reach: the claims live in the
// leader's caches only.
type Relay struct {
	self  string // this replica's identity in the Lease
	own   string // this replica's advertised address
	lease LeaderLease
	local atomic.Pointer[http.Handler]
	proxy *httputil.ReverseProxy
	log   logrus.FieldLogger
	now   func() time.Time

	mu       sync.Mutex
	leader   string // the leader's address, or "" with why
	why      string
	cachedAt time.Time
}

// NewRelay builds the relay of the replica whose Lease identity is self
// (see LeaderIdentity); lease is nil without leader election, when only
// this replica's own handler ever answers.
func NewRelay(self string, lease LeaderLease) *Relay {
	r := &Relay{self: self, lease: lease, log: logrus.WithField("component", "boot-endpoint"), now: time.Now}
	r.own, _ = LeaderAddress(self)
	transport := &http.Transport{
		// Straight to the leader's pod: never through a proxy the
		// environment names.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       time.Minute,
	}
	r.proxy = &httputil.ReverseProxy{Rewrite: r.rewrite, Transport: transport, ErrorHandler: r.unreachable}
	return r
}

// Serve makes h answer every request (this replica leads) until ctx ends.
func (r *Relay) Serve(ctx context.Context, h http.Handler) {
	r.local.Store(&h)
	go func() {
		<-ctx.Done()
		r.local.CompareAndSwap(&h, nil)
	}()
}

type leaderKey struct{}

func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h := r.local.Load(); h != nil {
		(*h).ServeHTTP(w, req)
		return
	}
	if req.Header.Get(relayedHeader) != "" {
		r.noLeader(w, "a forwarded request reached a replica that does not lead")
		return
	}
	leader, why := r.leaderAddress(req.Context())
	if leader == "" {
		r.noLeader(w, why)
		return
	}
	r.proxy.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), leaderKey{}, leader)))
}

// rewrite keeps the method, path, query and Host (the leader builds its
// URLs from the Host the server asked), adds X-Forwarded-For for the
// leader's logs, and sends no body: a boot request has none.
func (r *Relay) rewrite(pr *httputil.ProxyRequest) {
	leader, _ := pr.In.Context().Value(leaderKey{}).(string)
	pr.SetURL(&url.URL{Scheme: "http", Host: leader})
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
	pr.Out.Header.Set(relayedHeader, "1")
	pr.Out.Body, pr.Out.ContentLength = http.NoBody, 0
}

// unreachable answers a request the leader did not answer. The error is
// logged without its URL, which may hold a claim's nonce.
func (r *Relay) unreachable(w http.ResponseWriter, req *http.Request, err error) {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	r.forget()
	metrics.BootRefused.WithLabelValues(equinixv1.ReasonBootLeaderUnreachable).Inc()
	r.log.Debugf("forwarding a boot request from %s to the leader failed: %v", req.RemoteAddr, err)
	http.Error(w, "the leader of the boot endpoint did not answer; retry", http.StatusBadGateway)
}

func (r *Relay) noLeader(w http.ResponseWriter, why string) {
	metrics.BootRefused.WithLabelValues(equinixv1.ReasonBootNoLeader).Inc()
	r.log.Debugf("no leader to forward a boot request to: %s", why)
	http.Error(w, "no leader serves the boot endpoint right now; retry", http.StatusServiceUnavailable)
}

func (r *Relay) forget() {
	r.mu.Lock()
	r.cachedAt = time.Time{}
	r.mu.Unlock()
}

// leaderAddress is the leader's boot endpoint address, read from the
// Lease at most once a leaseCacheFor, or "" and why there is none.
func (r *Relay) leaderAddress(ctx context.Context) (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !r.cachedAt.IsZero() && now.Sub(r.cachedAt) < leaseCacheFor {
		return r.leader, r.why
	}
	r.leader, r.why = r.readLeader(ctx, now)
	r.cachedAt = now
	return r.leader, r.why
}

func (r *Relay) readLeader(ctx context.Context, now time.Time) (string, string) {
	if r.lease == nil {
		return "", "this replica has not started serving"
	}
	lease, err := r.lease(ctx)
	if err != nil {
		return "", "reading the leader Lease: " + err.Error()
	}
	return Leader(lease, r.self, r.own, now)
}

// Leader is the address of the boot endpoint of the lease's holder, or ""
// and why none can be forwarded to: no holder, a holder whose lease ran
// out, this replica itself (self, or its address own: it holds the lease
// but does not serve yet, or no longer), or an identity without an
// address.
func Leader(lease *coordinationv1.Lease, self, own string, now time.Time) (string, string) {
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" {
		return "", "the leader Lease has no holder"
	}
	holder := *spec.HolderIdentity
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil ||
		now.After(spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds)*time.Second)) {
		return "", "the lease of " + holder + " ran out"
	}
	if holder == self {
		return "", "this replica holds the lease but does not serve"
	}
	addr, err := LeaderAddress(holder)
	if err != nil {
		return "", err.Error()
	}
	if addr == own {
		return "", "the leader's address " + addr + " is this replica's"
	}
	return addr, ""
}
