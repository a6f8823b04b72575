package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// bootAsk is one request to the boot endpoint and its answer, as the
// client saw it.
type bootAsk struct {
	who        string
	start, end time.Time
	// kind is "script", "config", "media" (a boot image) or "other".
	kind, mac, nonce string
	status           int
	// configURL is the script's config_url (a 200 script only).
	configURL string
}

// bootLog records every request the fleet's servers and the prober make
// to the boot endpoint: invariant 3 is judged on the client's side.
type bootLog struct {
	mu   sync.Mutex
	asks []bootAsk
}

func newBootLog() *bootLog { return &bootLog{} }

func (l *bootLog) client(who string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &recorder{log: l, who: who, next: http.DefaultTransport}}
}

func (l *bootLog) all() []bootAsk {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bootAsk(nil), l.asks...)
}

type recorder struct {
	log  *bootLog
	who  string
	next http.RoundTripper
}

var (
	configPath = regexp.MustCompile(`^/boot/([^/]+)/config\.yaml$`)
	configArg  = regexp.MustCompile(`harvester\.install\.config_url=(\S+)`)
)

func (rc *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	a := bootAsk{who: rc.who, start: time.Now(), kind: "other", mac: normalMAC(req.URL.Query().Get("mac"))}
	if req.URL.Path == "/boot/ipxe" {
		a.kind = "script"
	} else if m := configPath.FindStringSubmatch(req.URL.Path); m != nil {
		a.kind, a.nonce = "config", m[1]
	} else if m := mediaPath.FindStringSubmatch(req.URL.Path); m != nil {
		a.kind, a.nonce = "media", m[1]
	}
	resp, err := rc.next.RoundTrip(req)
	a.end = time.Now()
	if err == nil {
		a.status = resp.StatusCode
		if a.kind == "script" && resp.StatusCode == http.StatusOK {
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if m := configArg.FindSubmatch(body); rerr == nil && m != nil {
				a.configURL = string(m[1])
			}
		}
	}
	rc.log.mu.Lock()
	rc.log.asks = append(rc.log.asks, a)
	rc.log.mu.Unlock()
	return resp, err
}

// normalMAC writes a MAC as the campaign compares them: lower case, with
// colons (iPXE may escape them in the query).
func normalMAC(mac string) string {
	mac = strings.ToLower(strings.ReplaceAll(mac, "-", ":"))
	if len(mac) == 12 && !strings.Contains(mac, ":") {
		var parts []string
		for i := 0; i < 12; i += 2 {
			parts = append(parts, mac[i:i+2])
		}
		mac = strings.Join(parts, ":")
	}
	return mac
}

func equalMAC(a, b string) bool { return normalMAC(a) == normalMAC(b) }

// stolen is a configuration URL the prober got by asking for a claimed
// server's script as that server (anyone on the management network can,
// while the claim is open), with the claim it belonged to.
type stolen struct {
	url, mac, server, uid string
}

// prober plays someone on the management network: stray MACs that keep
// asking for a script, stolen configuration URLs replayed after their
// claim may have ended, the same with a stray MAC, and guessed nonces.
type prober struct {
	w      *ownedWorld
	client *http.Client
	done   chan struct{}

	mu   sync.Mutex
	loot []stolen
	// images are boot image URLs read back from BMCs.
	images []stolen
	found  []string
	stolen int
	tries  int
}

func startProber(ctx context.Context, w *ownedWorld) *prober {
	p := &prober{w: w, client: w.boots.client("prober"), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(700 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				p.round(ctx, i)
			}
		}
	}()
	return p
}

func (p *prober) base() string { return "http://" + p.w.addr }

func (p *prober) get(ctx context.Context, raw string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return 0, ""
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	p.mu.Lock()
	p.tries++
	p.mu.Unlock()
	return resp.StatusCode, string(body)
}

func (p *prober) violation(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.found) < 20 {
		p.found = append(p.found, fmt.Sprintf(format, args...))
	}
}

// round is one pass: a stray MAC asks for a script; a claimed server's
// script is stolen; a stolen URL is replayed as stolen, with a stray MAC,
// and with a guessed nonce.
func (p *prober) round(ctx context.Context, i int) {
	stray := p.w.strays[i%len(p.w.strays)]
	if status, _ := p.get(ctx, p.base()+"/boot/ipxe?mac="+url.QueryEscape(stray)+"&uuid="); status == http.StatusOK {
		p.violation("the boot endpoint served a script to the stray MAC %s", stray)
	}
	s := p.w.servers[i%len(p.w.servers)]
	if uid := p.w.claims.current(s.spec.Name); uid != "" {
		status, body := p.get(ctx, fmt.Sprintf("%s/boot/ipxe?mac=%s&uuid=%s", p.base(), url.QueryEscape(s.spec.MAC), s.spec.UUID))
		m := configArg.FindStringSubmatch(body)
		// Kept only when the claim was the same before and after: the
		// URL is then surely that claim's.
		if status == http.StatusOK && m != nil && p.w.claims.current(s.spec.Name) == uid {
			p.mu.Lock()
			p.loot = append(p.loot, stolen{url: m[1], mac: s.spec.MAC, server: s.spec.Name, uid: uid})
			p.stolen++
			p.mu.Unlock()
		}
	}
	p.stealImage(i)
	p.replayImage(ctx, i, stray)
	if l, ok := p.pick(&p.loot, i); ok {
		p.replay(ctx, l, stray, "configuration", "config.yaml")
	}
}

// pick is one of the URLs in list (the i-th, round), read under the
// prober's lock: the probes add to the lists while others replay them.
func (p *prober) pick(list *[]stolen, i int) (stolen, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(*list) == 0 {
		return stolen{}, false
	}
	return (*list)[i%len(*list)], true
}

// replay asks for a stolen URL of what (a "configuration", a "boot
// image", whose file is file) as it is, with a stray MAC and with a
// guessed nonce: only the first may be served, and only while its claim
// is open.
func (p *prober) replay(ctx context.Context, l stolen, stray, what, file string) {
	before := p.w.claims.current(l.server)
	status, _ := p.get(ctx, l.url)
	after := p.w.claims.current(l.server)
	// The watch runs behind the apiserver: a claim it shows gone before
	// and after the request was gone when the endpoint answered.
	if served(status) && before != l.uid && after != l.uid {
		p.violation("the %s of server %s was served with the URL of its claim %s after that claim ended (claim now %q)", what, l.server, l.uid, after)
	}
	u, err := url.Parse(l.url)
	if err != nil {
		return
	}
	q := u.Query()
	q.Set("mac", stray)
	u.RawQuery = q.Encode()
	if status, _ := p.get(ctx, u.String()); served(status) {
		p.violation("the %s of a claim of %s was served to the stray MAC %s", what, l.server, stray)
	}
	guess := make([]byte, 32)
	_, _ = rand.Read(guess)
	g, err := url.Parse(l.url)
	if err != nil {
		return
	}
	g.Path = "/boot/" + base64.RawURLEncoding.EncodeToString(guess) + "/" + file
	if status, _ := p.get(ctx, g.String()); served(status) {
		p.violation("a %s of %s was served with a guessed nonce", what, l.server)
	}
}

func (p *prober) findings() (found []string, tries, stolen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.found...), p.tries, p.stolen
}
