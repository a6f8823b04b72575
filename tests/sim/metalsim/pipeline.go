package metalsim

import (
	"encoding/json"
	"net/http"
	"time"
)

type routeKind int

const (
	apiRoute routeKind = iota
	metadataRoute
)

// endpoint wraps a handler with authentication, fault injection, lazy
// transitions, the request log and notification delivery.
func (s *Simulator) endpoint(kind routeKind, op string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry := Request{
			Time:      s.clock.Now(),
			Method:    r.Method,
			Path:      r.URL.Path,
			Query:     r.URL.RawQuery,
			Operation: op,
		}
		out := s.process(w, r, kind, op, h)
		entry.Status = out.reply.status
		entry.Fault = out.fault
		entry.Dropped = out.drop
		if out.drop {
			entry.Status = 0
		}
		s.logRequest(entry)
		s.deliver()
		if out.drop {
			// Nothing was written yet, so aborting closes the connection
			// without a response: the client sees a transport error.
			panic(http.ErrAbortHandler)
		}
		writeReply(w, out.reply)
	})
}

type outcome struct {
	reply reply
	fault FaultKind
	drop  bool
}

func (s *Simulator) process(w http.ResponseWriter, r *http.Request, kind routeKind, op string, h handlerFunc) outcome {
	var projects map[string]bool
	var rateHeaders http.Header
	if kind == apiRoute {
		token := r.Header.Get("X-Auth-Token")
		projects = s.authenticate(token)
		if projects == nil {
			return outcome{reply: errorReply(http.StatusUnauthorized, []string{"Invalid authentication token"}, false)}
		}
		var limited bool
		rateHeaders, limited = s.rate.take(token, s.clock.Now())
		if limited {
			rep := errorReply(http.StatusTooManyRequests, []string{"Too many requests, please slow down"}, false)
			rep.header = rateHeaders
			return outcome{reply: rep}
		}
	}
	body, err := readBody(w, r)
	if err != nil {
		return outcome{reply: errorReply(http.StatusRequestEntityTooLarge, []string{"Request body too large"}, false)}
	}
	action := actionOf(op, body)
	if out, done := s.applyPreFaults(r, op, kind, action); done {
		return out
	}

	rep, post := s.apply(r, kind, op, action, body, projects, h)
	if post != nil {
		if post.Kind == FaultDropConnection {
			return outcome{fault: post.Kind, drop: true}
		}
		rep = serverErrorReply(post)
		return outcome{reply: rep, fault: post.Kind}
	}
	if rateHeaders != nil {
		if rep.header == nil {
			rep.header = http.Header{}
		}
		for k, v := range rateHeaders {
			rep.header[k] = v
		}
	}
	return outcome{reply: rep}
}

// apply runs the handler under the lock after applying due transitions,
// and picks the AfterStore fault that hits a successful request.
func (s *Simulator) apply(r *http.Request, kind routeKind, op, action string, body []byte, projects map[string]bool, h handlerFunc) (reply, *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.advanceLocked(now)
	rep, err := h(&call{s: s, r: r, op: op, now: now, body: body, projects: projects})
	if err != nil {
		rep = replyForError(err)
	}
	if rep.status >= 300 {
		return rep, nil
	}
	return rep, s.postFaultLocked(op, r.Method, kind, action)
}

// actionOf is the action type of a performAction request, for faults
// narrowed by Fault.Actions; "" for anything else or a body without one.
func actionOf(op string, body []byte) string {
	if op != OpPerformAction {
		return ""
	}
	var in struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(body, &in) != nil {
		return ""
	}
	return in.Type
}

// applyPreFaults sleeps for injected latency and answers for a fault that
// blocks the request before it is applied.
func (s *Simulator) applyPreFaults(r *http.Request, op string, kind routeKind, action string) (outcome, bool) {
	pre := s.preFaults(op, r.Method, kind, action)
	if pre.latency > 0 {
		t := time.NewTimer(pre.latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	if pre.block == nil {
		return outcome{}, false
	}
	if pre.block.Kind == FaultDropConnection {
		return outcome{fault: pre.block.Kind, drop: true}, true
	}
	return outcome{reply: s.faultReply(pre.block, op, s.clock.Now()), fault: pre.block.Kind}, true
}

// authenticate returns the projects the token may use, or nil.
func (s *Simulator) authenticate(token string) map[string]bool {
	if token == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.tokens[token]
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]bool, len(p))
	for id := range p {
		out[id] = true
	}
	return out
}

func notFoundHandler(*call) (reply, error) { return reply{}, errNotFound() }
