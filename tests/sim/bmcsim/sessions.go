package bmcsim

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Lockout is an account lockout rule: Failures refused logins within
// Window lock the account for Duration, during which even the right
// password is refused. iDRACs and most BMCs have one.
type Lockout struct {
	Failures int
	Window   time.Duration
	Duration time.Duration
}

// loginStats are what the BMC counts of logins.
type loginStats struct {
	accepted int
	refused  int
	// spans are the sessions, by ID: when each was opened, last used, and
	// logged out (or dropped).
	spans map[string]*sessionSpan
	// failures are the times of the recent refused logins.
	failures    []time.Time
	lockedUntil time.Time
}

type sessionSpan struct {
	opened, used, ended time.Time
}

// LoginStats is what a test reads of the BMC's logins.
type LoginStats struct {
	// Accepted sessions opened; Refused logins (a wrong password, a locked
	// account or basic auth refused).
	Accepted, Refused int
	// MostSessions is the largest number of sessions in use at once (see
	// Sessions).
	MostSessions int
	// Locked says whether the account is locked now.
	Locked bool
}

// Logins returns the login counts.
func (b *BMC) Logins() LoginStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return LoginStats{Accepted: b.logins.accepted, Refused: b.logins.refused, MostSessions: MostAtOnce(b.spansLocked()),
		Locked: b.opts.Now().Before(b.logins.lockedUntil)}
}

// Span is when a session was in use.
type Span struct {
	From, To time.Time
}

// SessionSpans returns when each session was in use: from its login to
// its logout, or to its last request when it was never logged out (a
// client killed with it open, whose session a BMC would expire) or the BMC
// forgot it, oldest first.
func (b *BMC) SessionSpans() []Span {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spansLocked()
}

func (b *BMC) spansLocked() []Span {
	out := make([]Span, 0, len(b.logins.spans))
	for _, s := range b.logins.spans {
		end := s.ended
		if end.IsZero() {
			end = s.used
		}
		out = append(out, Span{From: s.opened, To: end})
	}
	slices.SortFunc(out, func(a, b Span) int { return a.From.Compare(b.From) })
	return out
}

// MostAtOnce is the largest number of spans in use at once: for each span,
// itself and those begun no later that end after it begins. One that ends
// as the next begins is not at once with it.
func MostAtOnce(spans []Span) int {
	most := 0
	for i, s := range spans {
		n := 1
		for j, o := range spans {
			if j != i && !o.From.After(s.From) && o.To.After(s.From) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func (b *BMC) authorized(r *http.Request) bool {
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		b.mu.Lock()
		defer b.mu.Unlock()
		for id, t := range b.sessions {
			if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
				b.logins.spans[id].used = time.Now()
				return true
			}
		}
		return false
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.checkLocked(user, pass)
}

// checkLocked checks a login against the credentials and the lockout rule,
// counting a refusal.
func (b *BMC) checkLocked(user, pass string) bool {
	now := b.opts.Now()
	u := subtle.ConstantTimeCompare([]byte(user), []byte(b.opts.Username))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(b.opts.Password))
	if u&p == 1 && !now.Before(b.logins.lockedUntil) {
		return true
	}
	b.logins.refused++
	if lo := b.opts.Lockout; lo != nil && u&p != 1 {
		kept := b.logins.failures[:0]
		for _, at := range b.logins.failures {
			if now.Sub(at) < lo.Window {
				kept = append(kept, at)
			}
		}
		b.logins.failures = append(kept, now)
		if len(b.logins.failures) >= lo.Failures {
			b.logins.lockedUntil, b.logins.failures = now.Add(lo.Duration), nil
		}
	}
	return false
}

func (b *BMC) login(w http.ResponseWriter, r *http.Request) {
	var req struct{ UserName, Password string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.UserName == "" {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.")
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.checkLocked(req.UserName, req.Password) {
		writeError(w, http.StatusUnauthorized, "ResourceAtUriUnauthorized", "While accessing the resource at /redfish/v1/SessionService/Sessions, the service received an authorization error: invalid user name or password.")
		return
	}
	if b.opts.MaxSessions > 0 && len(b.sessions) >= b.opts.MaxSessions {
		// What an iDRAC answers (RAC0218), with a Base registry message.
		writeError(w, http.StatusServiceUnavailable, "SessionLimitExceeded", "The maximum number of user sessions is reached.")
		return
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	token := hex.EncodeToString(raw)
	b.nextSession++
	id := fmt.Sprint(b.nextSession)
	b.sessions[id] = token
	b.logins.accepted++
	now := time.Now()
	b.logins.spans[id] = &sessionSpan{opened: now, used: now}
	loc := sessionsPath + "/" + id
	w.Header().Set("X-Auth-Token", token)
	w.Header().Set("Location", loc)
	writeJSON(w, http.StatusCreated, b.session(id, req.UserName))
}

func (b *BMC) session(id, user string) map[string]any {
	s := resource(sessionsPath+"/"+id, "#Session.v1_3_0.Session", "Session.Session")
	s["Id"], s["Name"], s["UserName"] = id, "User Session", user
	return s
}

func (b *BMC) logout(w http.ResponseWriter, id string) {
	b.mu.Lock()
	_, ok := b.sessions[id]
	delete(b.sessions, id)
	if ok {
		b.logins.spans[id].ended = time.Now()
	}
	b.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", "The session does not exist.")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// DropSessions forgets every session, as a BMC that restarted its web
// server does: their tokens are refused from then on.
func (b *BMC) DropSessions() {
	b.mu.Lock()
	defer b.mu.Unlock()
	// A session the BMC forgot was last in use at its last request: its
	// holder may be long gone (a client killed with it open).
	for id := range b.sessions {
		b.logins.spans[id].ended = b.logins.spans[id].used
	}
	b.sessions = map[string]string{}
}
