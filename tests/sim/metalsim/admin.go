package metalsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// AdminPrefix is where the admin API is served, outside /metal/v1: faults
// and the platform's own actions (a reclaim, a maintenance notice, an
// out-of-band delete, reservations, the spot market), so a demo, a
// benchmark or any outside client can drive what in-process tests drive
// through Go calls. It answers loopback clients only and takes no token.
const AdminPrefix = "/_sim"

// adminRoutes are the admin API's endpoints.
func (s *Simulator) adminRoutes(mux *http.ServeMux) {
	for pattern, h := range map[string]func(*http.Request) (int, any, error){
		"GET /faults":                               s.adminListFaults,
		"POST /faults":                              s.adminAddFault,
		"DELETE /faults":                            s.adminClearFaults,
		"DELETE /faults/{id}":                       s.adminRemoveFault,
		"PUT /devices/{id}/termination-time":        s.adminTerminationTime,
		"POST /devices/{id}/maintenance":            s.adminMaintenance,
		"DELETE /devices/{id}":                      s.adminDeleteDevice,
		"POST /projects/{id}/hardware-reservations": s.adminAddReservations,
		"PUT /spot-market":                          s.adminSpotMarket,
	} {
		method, path, _ := cutSpace(pattern)
		mux.Handle(method+" "+AdminPrefix+path, adminHandler(h))
	}
	mux.Handle(AdminPrefix+"/", adminHandler(func(*http.Request) (int, any, error) {
		return http.StatusNotFound, nil, errors.New("no such admin endpoint")
	}))
}

func cutSpace(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// adminHandler refuses clients that are not on loopback and writes the
// answer as JSON: the value, or {"error": ...}.
func adminHandler(h func(*http.Request) (int, any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, v, err := http.StatusForbidden, any(nil), errors.New("the simulator's admin API answers loopback clients only")
		if isLoopback(r.RemoteAddr) {
			status, v, err = h(r)
		}
		if err != nil {
			v = map[string]string{"error": err.Error()}
		}
		if v == nil {
			w.WriteHeader(status)
			return
		}
		b, merr := json.Marshal(v)
		if merr != nil {
			status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b) // the client is gone; nothing left to tell it
	})
}

func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// decodeAdmin reads a JSON body into v, refusing unknown fields.
func decodeAdmin(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid body: %w", err)
	}
	return nil
}

// adminStatus maps a Simulator error to a status.
func adminStatus(err error, ok int) (int, any, error) {
	switch {
	case err == nil:
		return ok, nil, nil
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, nil, err
	default:
		return http.StatusBadRequest, nil, err
	}
}

func (s *Simulator) adminListFaults(*http.Request) (int, any, error) {
	return http.StatusOK, map[string]any{"faults": s.Faults()}, nil
}

func (s *Simulator) adminAddFault(r *http.Request) (int, any, error) {
	var f Fault
	if err := decodeAdmin(r, &f); err != nil {
		return http.StatusBadRequest, nil, err
	}
	id := s.InjectFault(f)
	return http.StatusCreated, FaultState{ID: id, Fault: f}, nil
}

func (s *Simulator) adminClearFaults(*http.Request) (int, any, error) {
	s.ClearFaults()
	return http.StatusNoContent, nil, nil
}

func (s *Simulator) adminRemoveFault(r *http.Request) (int, any, error) {
	n, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		return http.StatusBadRequest, nil, fmt.Errorf("fault ID %q is not a number", r.PathValue("id"))
	}
	if !s.RemoveFault(FaultID(n)) {
		return http.StatusNotFound, nil, fmt.Errorf("fault %d: %w", n, ErrNotFound)
	}
	return http.StatusNoContent, nil, nil
}

func (s *Simulator) adminTerminationTime(r *http.Request) (int, any, error) {
	var in struct {
		TerminationTime *time.Time `json:"termination_time"`
	}
	if err := decodeAdmin(r, &in); err != nil {
		return http.StatusBadRequest, nil, err
	}
	var t time.Time
	if in.TerminationTime != nil {
		t = *in.TerminationTime
	}
	return adminStatus(s.SetTerminationTime(r.PathValue("id"), t), http.StatusNoContent)
}

func (s *Simulator) adminMaintenance(r *http.Request) (int, any, error) {
	var in struct {
		Start   time.Time `json:"start"`
		Message string    `json:"message"`
	}
	if err := decodeAdmin(r, &in); err != nil {
		return http.StatusBadRequest, nil, err
	}
	if in.Start.IsZero() {
		in.Start = s.clock.Now()
	}
	return adminStatus(s.AddMaintenanceEvent(r.PathValue("id"), in.Start, in.Message), http.StatusNoContent)
}

func (s *Simulator) adminDeleteDevice(r *http.Request) (int, any, error) {
	return adminStatus(s.DeleteDeviceOutOfBand(r.PathValue("id")), http.StatusNoContent)
}

func (s *Simulator) adminAddReservations(r *http.Request) (int, any, error) {
	var in struct {
		HardwareReservation
		Count int `json:"count"`
	}
	if err := decodeAdmin(r, &in); err != nil {
		return http.StatusBadRequest, nil, err
	}
	ids, err := s.AddHardwareReservations(r.PathValue("id"), in.HardwareReservation, in.Count)
	if err != nil {
		return adminStatus(err, 0)
	}
	return http.StatusCreated, map[string][]string{"ids": ids}, nil
}

func (s *Simulator) adminSpotMarket(r *http.Request) (int, any, error) {
	var in SpotMarket
	if err := decodeAdmin(r, &in); err != nil {
		return http.StatusBadRequest, nil, err
	}
	return adminStatus(s.SetSpotMarket(in), http.StatusNoContent)
}
