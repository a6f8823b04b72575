package metalsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

const (
	apiPrefix = "/metal/v1"
	// DeviceIDHeader identifies the calling device on the metadata service,
	// standing in for the source-address routing of the real one.
	DeviceIDHeader = "X-Simulator-Device-ID"

	maxBody = 1 << 20
)

// reply is a complete response, built while the simulator lock is held so
// marshalling never races with later state changes.
type reply struct {
	status      int
	body        []byte
	contentType string
	header      http.Header
}

// jsonReply marshals v with encoding/json, which calls the SDK model's own
// MarshalJSON: whatever the simulator sends, the SDK can decode.
func jsonReply(status int, v any) (reply, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return reply{}, fmt.Errorf("marshal %T: %w", v, err)
	}
	return reply{status: status, body: b, contentType: "application/json"}, nil
}

func emptyReply(status int) (reply, error) { return reply{status: status}, nil }

func errorReply(status int, msgs []string, plural bool) reply {
	e := metalv1.Error{}
	if plural {
		e.Errors = msgs
	} else {
		e.Error = ptr(strings.Join(msgs, ", "))
	}
	r, err := jsonReply(status, e)
	if err != nil {
		return reply{status: http.StatusInternalServerError, body: []byte(`{"error":"internal error"}`), contentType: "application/json"}
	}
	return r
}

func replyForError(err error) reply {
	var ae *apiError
	if errors.As(err, &ae) {
		return errorReply(ae.status, ae.msgs, ae.plural)
	}
	return errorReply(http.StatusInternalServerError, []string{err.Error()}, false)
}

// call is one request as the handlers see it.
type call struct {
	s        *Simulator
	r        *http.Request
	op       string
	now      time.Time
	body     []byte
	projects map[string]bool
}

type handlerFunc func(c *call) (reply, error)

func (c *call) pathValue(name string) string { return c.r.PathValue(name) }

func (c *call) query(name string) string { return c.r.URL.Query().Get(name) }

// list returns a csv ("include=a,b") or multi ("types=a&types=b") parameter.
func (c *call) list(name string) []string {
	var out []string
	for _, v := range c.r.URL.Query()[name] {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

func (c *call) boolQuery(name string) (bool, error) {
	v := c.query(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errInvalid(fmt.Sprintf("%s must be true or false", name))
	}
	return b, nil
}

// decode unmarshals the JSON body into v through the SDK model's
// UnmarshalJSON, which enforces the spec's required properties and enums.
func (c *call) decode(v any) error {
	if len(strings.TrimSpace(string(c.body))) == 0 {
		return errInvalid("Request body is required")
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return errInvalid(fmt.Sprintf("Invalid request body: %v", err))
	}
	return nil
}

// forbidden answers a request for an object of another project: 403 with
// msg, or 404 for operations whose spec has no 403.
func (c *call) forbidden(msg string) error {
	if opsAnswering404[c.op] {
		return errNotFound()
	}
	return errStatus(http.StatusForbidden, "%s", msg)
}

func (c *call) projectLocked(id string) (*project, error) {
	p, ok := c.s.projects[id]
	if !ok {
		return nil, errNotFound()
	}
	if !c.projects[id] {
		return nil, c.forbidden("You are not authorized to view this project")
	}
	return p, nil
}

func (c *call) deviceLocked(id string) (*device, error) {
	d, ok := c.s.devices[id]
	if !ok {
		return nil, errNotFound()
	}
	if !c.projects[d.project.id] {
		return nil, c.forbidden("You are not authorized to view this device")
	}
	return d, nil
}

func (c *call) portLocked(id string) (*port, error) {
	p, ok := c.s.ports[id]
	if !ok {
		return nil, errNotFound()
	}
	if !c.projects[p.dev.project.id] {
		return nil, c.forbidden("You are not authorized to view this port")
	}
	return p, nil
}

func (c *call) vlanLocked(id string) (*vlan, error) {
	v, ok := c.s.vlans[id]
	if !ok {
		return nil, errNotFound()
	}
	if !c.projects[v.project.id] {
		return nil, c.forbidden("You are not authorized to view this virtual network")
	}
	return v, nil
}

// readBody reads at most maxBody bytes of the request body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return b, nil
}

func writeReply(w http.ResponseWriter, rep reply) {
	for k, vs := range rep.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if len(rep.body) > 0 {
		ct := rep.contentType
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Length", strconv.Itoa(len(rep.body)))
	}
	w.WriteHeader(rep.status)
	if len(rep.body) > 0 {
		_, _ = w.Write(rep.body) // the client is gone; nothing left to tell it
	}
}
