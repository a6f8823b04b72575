package metalsim

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// FaultKind selects what an injected fault does.
type FaultKind string

const (
	// FaultRateLimit answers 429 with Retry-After and X-RateLimit-* headers.
	FaultRateLimit FaultKind = "rate_limit"
	// FaultServerError answers Status (500 by default). 502 and 503 carry
	// the non-JSON bodies an intermediary sends unless Body is set. With
	// AfterStore the request is applied first and only the answer is lost.
	FaultServerError FaultKind = "server_error"
	// FaultForbidden answers 403; without Operations it hits GET requests only.
	FaultForbidden FaultKind = "forbidden"
	// FaultLatency delays the answer by Latency (real time, even with a
	// FakeClock).
	FaultLatency FaultKind = "latency"
	// FaultDropConnection closes the connection without an answer, so the
	// client sees a transport error. With AfterStore the request is applied
	// first: a create is stored although the client never learns its ID.
	FaultDropConnection FaultKind = "drop_connection"
	// FaultProvisionFailure makes a device created through a matching
	// createDevice end in state failed instead of active.
	FaultProvisionFailure FaultKind = "provision_failure"
	// FaultNoCapacity refuses a matching createDevice with 422
	// {"errors":["There aren't available servers in that metro"]}.
	FaultNoCapacity FaultKind = "no_capacity"
	// FaultSpotReclaim makes the platform take back a spot device created
	// through a matching createDevice: once it is active it gets a
	// termination notice (termination_time = then + LeadTime) and at that
	// time it is reclaimed (deprovisioning, then gone).
	FaultSpotReclaim FaultKind = "spot_reclaim"
)

// FaultID identifies an injected fault.
type FaultID int

// Fault describes an injected failure. A fault matches a request when its
// operation is in Operations (every API operation when empty; the metadata
// service only when named), and for
// FaultProvisionFailure and FaultNoCapacity when Plan and Metro (if set)
// match the create. A matching fault fires with Probability (drawn from
// the seeded generator; 0 means always) until it fired Count times (0 means
// no limit).
type Fault struct {
	Kind        FaultKind
	Operations  []string
	Probability float64
	Count       int
	// Status is the code of a FaultServerError: 500, 502, 503 or 504.
	Status int
	// Body and ContentType replace the default body of a FaultServerError,
	// FaultRateLimit or FaultForbidden.
	Body        string
	ContentType string
	// Message replaces the default error message of JSON answers.
	Message string
	// RetryAfter is the Retry-After of a FaultRateLimit (default 2s).
	RetryAfter time.Duration
	// Latency is the delay of a FaultLatency.
	Latency time.Duration
	// AfterStore applies FaultServerError and FaultDropConnection after the
	// request was applied; they then fire only when it succeeded.
	AfterStore bool
	// LeadTime is how long a FaultSpotReclaim's notice comes before the
	// reclaim (0: at once).
	LeadTime time.Duration
	// Plan and Metro narrow FaultProvisionFailure, FaultNoCapacity and
	// FaultSpotReclaim.
	Plan  string
	Metro string
	// Actions narrows a fault on performAction to these action types
	// (power_on, power_off, reboot, reinstall, rescue); a fault naming
	// Actions hits nothing else.
	Actions []string
}

type faultEntry struct {
	id    FaultID
	fault Fault
	fired int
}

// InjectFault adds a fault and returns its ID.
func (s *Simulator) InjectFault(f Fault) FaultID {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultSeq++
	s.faults = append(s.faults, &faultEntry{id: s.faultSeq, fault: f})
	return s.faultSeq
}

// RemoveFault removes one fault and reports whether it was there.
func (s *Simulator) RemoveFault(id FaultID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.faults)
	s.faults = slices.DeleteFunc(s.faults, func(e *faultEntry) bool { return e.id == id })
	return len(s.faults) < n
}

// ClearFaults removes every fault.
func (s *Simulator) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// FaultFired reports how often a fault fired.
func (s *Simulator) FaultFired(id FaultID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.faults {
		if e.id == id {
			return e.fired
		}
	}
	return 0
}

// fireLocked draws whether e fires now and counts it. Callers hold s.mu.
func (s *Simulator) fireLocked(e *faultEntry) bool {
	f := e.fault
	if f.Count > 0 && e.fired >= f.Count {
		return false
	}
	if f.Probability > 0 && f.Probability < 1 && s.faultRand.Float64() >= f.Probability {
		return false
	}
	e.fired++
	return true
}

// matchesOp: a fault without Operations hits every API request (GETs only
// for FaultForbidden) but never the metadata service, which a test targets
// by naming its operations. With Actions it hits only those device actions.
func (f Fault) matchesOp(op, method string, kind routeKind, action string) bool {
	if len(f.Actions) > 0 && (op != OpPerformAction || !slices.Contains(f.Actions, action)) {
		return false
	}
	if len(f.Operations) == 0 {
		return kind == apiRoute && (f.Kind != FaultForbidden || method == http.MethodGet)
	}
	return slices.Contains(f.Operations, op)
}

// requestFaults are the faults that hit a request before it is applied.
type requestFaults struct {
	latency time.Duration
	block   *Fault
}

func (s *Simulator) preFaults(op, method string, kind routeKind, action string) requestFaults {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out requestFaults
	for _, e := range s.faults {
		f := e.fault
		if !f.matchesOp(op, method, kind, action) {
			continue
		}
		switch {
		case f.Kind == FaultLatency:
			if s.fireLocked(e) {
				out.latency += f.Latency
			}
		case out.block != nil:
		case f.Kind == FaultRateLimit || f.Kind == FaultForbidden ||
			((f.Kind == FaultServerError || f.Kind == FaultDropConnection) && !f.AfterStore):
			if s.fireLocked(e) {
				out.block = &f
			}
		}
	}
	return out
}

// postFaultLocked returns the AfterStore fault hitting a successful request.
func (s *Simulator) postFaultLocked(op, method string, kind routeKind, action string) *Fault {
	for _, e := range s.faults {
		f := e.fault
		if !f.AfterStore || (f.Kind != FaultServerError && f.Kind != FaultDropConnection) {
			continue
		}
		if f.matchesOp(op, method, kind, action) && s.fireLocked(e) {
			return &f
		}
	}
	return nil
}

// createFaultLocked returns the first firing fault of kind matching a
// device create of plan in metro.
func (s *Simulator) createFaultLocked(kind FaultKind, plan, metro string) *Fault {
	for _, e := range s.faults {
		f := e.fault
		if f.Kind != kind {
			continue
		}
		if len(f.Operations) > 0 && !slices.Contains(f.Operations, OpCreateDevice) {
			continue
		}
		if (f.Plan != "" && f.Plan != plan) || (f.Metro != "" && f.Metro != metro) {
			continue
		}
		if s.fireLocked(e) {
			return &f
		}
	}
	return nil
}

// faultReply builds the answer of a blocking fault.
func (s *Simulator) faultReply(f *Fault, op string, now time.Time) reply {
	switch f.Kind {
	case FaultRateLimit:
		return s.rateLimitedReply(f, now)
	case FaultForbidden:
		msg := f.Message
		if msg == "" {
			msg = "You are not authorized to view this resource"
			if isDeviceOp(op) {
				msg = "You are not authorized to view this device"
			}
		}
		return customBody(f, errorReply(http.StatusForbidden, []string{msg}, false))
	default:
		return serverErrorReply(f)
	}
}

func (s *Simulator) rateLimitedReply(f *Fault, now time.Time) reply {
	retry := f.RetryAfter
	if retry <= 0 {
		retry = 2 * time.Second
	}
	msg := f.Message
	if msg == "" {
		msg = "Too many requests, please slow down"
	}
	rep := customBody(f, errorReply(http.StatusTooManyRequests, []string{msg}, false))
	limit := s.rate.limit
	if limit <= 0 {
		limit = nominalRateLimit
	}
	rep.header = http.Header{}
	rep.header.Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
	rep.header.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	rep.header.Set("X-RateLimit-Remaining", "0")
	rep.header.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(retry).Unix(), 10))
	return rep
}

func serverErrorReply(f *Fault) reply {
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	var rep reply
	switch status {
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		rep = reply{status: status, contentType: "text/html", body: []byte(fmt.Sprintf(
			"<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n<center><h1>%d %s</h1></center>\r\n</body>\r\n</html>\r\n",
			status, http.StatusText(status), status, http.StatusText(status)))}
	case http.StatusServiceUnavailable:
		rep = reply{status: status, contentType: "text/plain",
			body: []byte("upstream connect error or disconnect/reset before headers. reset reason: connection failure")}
	default:
		msg := f.Message
		if msg == "" {
			msg = "Something went wrong. Please try again later."
		}
		rep = errorReply(status, []string{msg}, true)
	}
	return customBody(f, rep)
}

func customBody(f *Fault, rep reply) reply {
	if f.Body != "" {
		rep.body = []byte(f.Body)
		rep.contentType = f.ContentType
		if rep.contentType == "" {
			rep.contentType = "text/plain"
		}
	}
	return rep
}

func isDeviceOp(op string) bool {
	switch op {
	case OpFindDeviceByID, OpUpdateDevice, OpDeleteDevice, OpPerformAction,
		OpFindDeviceEvents, OpFindIPAssignments,
		OpCreateIPAssignment, OpFindBgpSessions, OpCreateBgpSession, OpGetBgpNeighborData:
		return true
	}
	return false
}
