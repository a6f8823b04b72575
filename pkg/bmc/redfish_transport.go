package bmc

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"
)

// readsKept bounds how long a resource read in a pass is answered from
// memory: longer than a poll takes on a slow BMC, shorter than the checks
// of a power command's effect, which read anew.
const readsKept = 8 * time.Second

// transport is a Redfish client's round tripper. It carries the
// credentials: the session's token, or basic auth on a BMC without
// sessions, so that gofish's client logs in through it and reads the
// service root once, not again for the login. And it keeps what a pass
// read: the pass asks for the computer system for its health, its log, its
// power and its facts, and for the drives for the health and the facts,
// which a BMC would otherwise answer up to five times over in a second. A
// request that is no read (a login, a logout, a command) forgets every
// read. Reads are kept during the login (Dial) and, after it, only for a
// caller that starts passes (NewPass): a client used without them reads
// anew each time.
type transport struct {
	next http.RoundTripper
	now  func() time.Time

	mu    sync.Mutex
	token string
	user  string
	pass  string
	basic bool
	// keep says reads are kept and answered from memory; passes counts
	// the caller's passes.
	keep   bool
	passes int
	reads  map[string]keptRead
}

type keptRead struct {
	at     time.Time
	status int
	header http.Header
	body   []byte
}

func newTransport(next http.RoundTripper) *transport {
	return &transport{next: next, now: time.Now, keep: true, reads: map[string]keptRead{}}
}

// loggedIn ends the login's keeping of reads; what it read is kept for the
// caller's first pass.
func (t *transport) loggedIn() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keep = false
}

// newPass keeps the reads of a pass of the caller from now on: the first
// pass after the login also gets the login's, later ones read anew.
func (t *transport) newPass() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.passes > 0 {
		t.reads = map[string]keptRead{}
	}
	t.passes++
	t.keep = true
}

// useToken sends the session's token with each request from now on; ""
// sends none.
func (t *transport) useToken(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.token, t.basic = token, false
	t.reads = map[string]keptRead{}
}

// useBasic sends basic auth with each request from now on.
func (t *transport) useBasic(user, pass string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.user, t.pass, t.basic, t.token = user, pass, true, ""
	t.reads = map[string]keptRead{}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.URL.String()
	t.mu.Lock()
	if req.Method != http.MethodGet {
		t.reads = map[string]keptRead{}
	} else if r, ok := t.reads[key]; ok && t.keep && t.now().Sub(r.at) < readsKept {
		t.mu.Unlock()
		return r.response(req), nil
	}
	token, basic, user, pass, keep := t.token, t.basic, t.user, t.pass, t.keep
	t.mu.Unlock()

	out := req.Clone(req.Context())
	switch {
	case token != "":
		out.Header.Set("X-Auth-Token", token)
	case basic:
		out.SetBasicAuth(user, pass)
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil || !keep || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	kept := keptRead{at: t.now(), status: resp.StatusCode, header: resp.Header.Clone(), body: body}
	t.mu.Lock()
	t.reads[key] = kept
	t.mu.Unlock()
	return kept.response(req), nil
}

func (r keptRead) response(req *http.Request) *http.Response {
	return &http.Response{
		Status: http.StatusText(r.status), StatusCode: r.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.header.Clone(), Body: io.NopCloser(bytes.NewReader(r.body)), ContentLength: int64(len(r.body)), Request: req,
	}
}

// CloseIdleConnections closes the connections left open for reuse.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
