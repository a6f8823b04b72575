package bmcsim

import (
	"net/http"
	"strings"
	"time"
)

// FaultKind names a misbehaviour a test can switch on.
type FaultKind string

// Fault kinds.
const (
	// FaultUnauthorized answers 401 with a Redfish error, as a BMC does after
	// its sessions were dropped or the account was locked.
	FaultUnauthorized FaultKind = "Unauthorized"
	// FaultServerError answers Status (default 500) with a Redfish error.
	FaultServerError FaultKind = "ServerError"
	// FaultLatency waits Latency before handling the request normally.
	FaultLatency FaultKind = "Latency"
	// FaultLostAnswer handles the request, then drops the connection
	// without an answer: the BMC acted, the client cannot know it did.
	FaultLostAnswer FaultKind = "LostAnswer"
)

// Fault is one injected misbehaviour. It matches requests whose path starts
// with PathPrefix ("" = all) and whose method is Method ("" = all), and
// fires Count times (0 = until removed).
type Fault struct {
	Kind       FaultKind
	PathPrefix string
	Method     string
	Count      int
	Status     int
	Latency    time.Duration
}

// FaultID identifies an injected fault.
type FaultID int

type faultState struct {
	id    FaultID
	f     Fault
	fired int
}

// InjectFault switches a fault on.
func (b *BMC) InjectFault(f Fault) FaultID {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextFault++
	b.faults = append(b.faults, &faultState{id: FaultID(b.nextFault), f: f})
	return FaultID(b.nextFault)
}

// RemoveFault switches one fault off.
func (b *BMC) RemoveFault(id FaultID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, fs := range b.faults {
		if fs.id == id {
			b.faults = append(b.faults[:i], b.faults[i+1:]...)
			return
		}
	}
}

// ClearFaults switches every fault off.
func (b *BMC) ClearFaults() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = nil
}

// FaultFired says how many times a fault fired.
func (b *BMC) FaultFired(id FaultID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fired[id]
}

// takeFaults returns the faults matching r and counts them as fired; a
// fault whose Count is used up is dropped.
func (b *BMC) takeFaults(r *http.Request) []Fault {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests++
	b.requestLog = append(b.requestLog, r.Method+" "+r.URL.RequestURI())
	var out []Fault
	kept := b.faults[:0]
	for _, fs := range b.faults {
		match := strings.HasPrefix(r.URL.Path, fs.f.PathPrefix) && (fs.f.Method == "" || fs.f.Method == r.Method)
		if match {
			fs.fired++
			b.fired[fs.id]++
			out = append(out, fs.f)
		}
		if fs.f.Count == 0 || fs.fired < fs.f.Count || !match {
			kept = append(kept, fs)
		}
	}
	b.faults = kept
	return out
}

// applyFaults runs the faults for r; it returns true when it answered.
func (b *BMC) applyFaults(w http.ResponseWriter, r *http.Request) bool {
	for _, f := range b.takeFaults(r) {
		switch f.Kind {
		case FaultLatency:
			t := time.NewTimer(f.Latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return true
			}
		case FaultLostAnswer:
			b.handle(discardWriter{header: http.Header{}}, r)
			// The server closes the connection without writing anything.
			panic(http.ErrAbortHandler)
		case FaultUnauthorized:
			writeError(w, http.StatusUnauthorized, "NoValidSession", "There is no valid session established with the implementation.")
			return true
		case FaultServerError:
			status := f.Status
			if status == 0 {
				status = http.StatusInternalServerError
			}
			writeError(w, status, "InternalError", "The request failed due to an internal service error.  The service is still operational.")
			return true
		}
	}
	return false
}

// discardWriter takes an answer and keeps none of it.
type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header         { return d.header }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}
