package metal

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/pkg/version"
)

// Credentials select a project and the token to reach it. They print as
// "project=<id> token=<redacted>" with every fmt verb.
type Credentials struct {
	Token     string
	ProjectID string
}

func (c Credentials) String() string {
	tok := "<empty>"
	if c.Token != "" {
		tok = redact.Placeholder
	}
	return "project=" + c.ProjectID + " token=" + tok
}

// GoString implements fmt.GoStringer for %#v.
func (c Credentials) GoString() string { return "metal.Credentials{" + c.String() + "}" }

// Format implements fmt.Formatter, so no verb (%x, %q, %+v) reaches the token.
func (c Credentials) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, c.GoString())
		return
	}
	_, _ = io.WriteString(f, c.String())
}

// key identifies the credentials without holding the token.
func (c Credentials) key() [sha256.Size]byte {
	return sha256.Sum256([]byte(c.ProjectID + "\x00" + c.Token))
}

func (c Credentials) tokenKey() [sha256.Size]byte {
	return sha256.Sum256([]byte(c.Token))
}

// Provider hands out a Client per set of credentials.
type Provider interface {
	// Client returns the client for creds. Call it on every reconcile with
	// the credentials just read from the Secret: a rotated token simply yields
	// a new client.
	Client(creds Credentials) (Client, error)
}

// ProviderFunc adapts a function to Provider (handy for fakes).
type ProviderFunc func(Credentials) (Client, error)

// Client calls f.
func (f ProviderFunc) Client(creds Credentials) (Client, error) { return f(creds) }

// Options configure the SDK-backed Provider. Zero values pick the defaults.
type Options struct {
	// BaseURL is the API root, https://api.equinix.com by default;
	// "/metal/v1" is appended unless it already ends with it.
	BaseURL string
	// Timeout bounds each HTTP request (default 30s).
	Timeout time.Duration
	// UserAgent is the product part of the user agent (default
	// "harvester-equinix-addon/<version>"); the SDK's own follows it.
	UserAgent string
	// RequestsPerSecond and Burst size the token bucket shared by every client
	// of one API token (default 5/s, burst 10). A negative rate disables it.
	RequestsPerSecond float64
	Burst             int
	// MaxLimiterWait is the longest a call waits for the token bucket before
	// it fails as Throttled (default 10s).
	MaxLimiterWait time.Duration
	// Registerer receives the Metal API metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// MaxClients bounds the client cache (default 32); clients unused for
	// ClientIdleTimeout (default 1h) are dropped too.
	MaxClients        int
	ClientIdleTimeout time.Duration
	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
	// Now replaces the clock of the Retry-After bookkeeping (tests).
	Now func() time.Time
}

const (
	defaultBaseURL        = "https://api.equinix.com"
	apiPath               = "/metal/v1"
	defaultTimeout        = 30 * time.Second
	defaultRPS            = 5
	defaultBurst          = 10
	defaultMaxLimiterWait = 10 * time.Second
	defaultMaxClients     = 32
	defaultIdleTimeout    = time.Hour
)

func (o Options) withDefaults() Options {
	if o.BaseURL == "" {
		o.BaseURL = defaultBaseURL
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = "harvester-equinix-addon/" + version.Version
	}
	if o.RequestsPerSecond == 0 {
		o.RequestsPerSecond = defaultRPS
	}
	if o.Burst <= 0 {
		o.Burst = defaultBurst
	}
	if o.MaxLimiterWait <= 0 {
		o.MaxLimiterWait = defaultMaxLimiterWait
	}
	if o.MaxClients <= 0 {
		o.MaxClients = defaultMaxClients
	}
	if o.ClientIdleTimeout <= 0 {
		o.ClientIdleTimeout = defaultIdleTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// apiURL validates the base URL and points it at the v1 API.
func apiURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil {
		return "", fmt.Errorf("metal API base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("metal API base URL %q: want http(s)://host[/path]", base)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("metal API base URL %q: must not carry user info, a query or a fragment", u.Redacted())
	}
	s := u.String()
	if !strings.HasSuffix(s, apiPath) {
		s += apiPath
	}
	return s, nil
}

// sdkProvider builds and caches SDK-backed clients.
type sdkProvider struct {
	opts    Options
	baseURL string
	http    *http.Client
	metrics *metrics

	mu      sync.Mutex
	clients map[[sha256.Size]byte]*clientEntry
}

type clientEntry struct {
	client   *sdkClient
	tokenKey [sha256.Size]byte
	lastUsed time.Time
}

// NewProvider returns the Equinix Metal Provider.
func NewProvider(opts Options) (Provider, error) {
	opts = opts.withDefaults()
	base, err := apiURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	transport := opts.Transport
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &sdkProvider{
		opts:    opts,
		baseURL: base,
		http:    &http.Client{Timeout: opts.Timeout, Transport: transport},
		metrics: m,
		clients: map[[sha256.Size]byte]*clientEntry{},
	}, nil
}

// Client returns the cached client for creds, building one on first use.
func (p *sdkProvider) Client(creds Credentials) (Client, error) {
	if err := validateCredentials(creds); err != nil {
		return nil, err
	}
	key := creds.key()
	now := p.opts.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	p.evictLocked(now)
	if c, ok := p.clients[key]; ok {
		c.lastUsed = now
		return c.client, nil
	}
	tk := creds.tokenKey()
	c := &clientEntry{
		client:   newSDKClient(creds, p.baseURL, p.http, p.opts.UserAgent, p.limiterLocked(tk), p.metrics),
		tokenKey: tk,
		lastUsed: now,
	}
	p.clients[key] = c
	p.shrinkLocked()
	return c.client, nil
}

func validateCredentials(creds Credentials) error {
	switch {
	case strings.TrimSpace(creds.Token) == "":
		return &failure.Error{Seam: Seam, Op: "Client", Class: failure.Unauthorized, Message: "the credentials have no API token"}
	case strings.TrimSpace(creds.ProjectID) == "":
		return &failure.Error{Seam: Seam, Op: "Client", Class: failure.Unauthorized, Message: "the credentials have no project ID"}
	case strings.ContainsAny(creds.ProjectID, "/?#% "):
		return &failure.Error{Seam: Seam, Op: "Client", Class: failure.Unauthorized, Message: "the project ID is not a valid ID"}
	}
	return nil
}

// limiterLocked shares one limiter between the clients of one token: the
// API limits per token, whatever the project.
func (p *sdkProvider) limiterLocked(tokenKey [sha256.Size]byte) *limiter {
	for _, c := range p.clients {
		if c.tokenKey == tokenKey {
			return c.client.limiter
		}
	}
	rps := rate.Limit(p.opts.RequestsPerSecond)
	if rps < 0 {
		rps = rate.Inf
	}
	return newLimiter(rps, p.opts.Burst, p.opts.MaxLimiterWait, p.opts.Now)
}

func (p *sdkProvider) evictLocked(now time.Time) {
	for k, c := range p.clients {
		if now.Sub(c.lastUsed) > p.opts.ClientIdleTimeout {
			delete(p.clients, k)
		}
	}
}

// shrinkLocked drops the least recently used clients beyond MaxClients.
func (p *sdkProvider) shrinkLocked() {
	for len(p.clients) > p.opts.MaxClients {
		var oldestKey [sha256.Size]byte
		var oldest time.Time
		first := true
		for k, c := range p.clients {
			if first || c.lastUsed.Before(oldest) {
				oldestKey, oldest, first = k, c.lastUsed, false
			}
		}
		delete(p.clients, oldestKey)
	}
}
