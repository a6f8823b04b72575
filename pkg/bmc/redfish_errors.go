package bmc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// stage says how far a Redfish exchange had got, which changes what a 404
// or a bad body means.
type stage int

const (
	stageRoot    stage = iota // reading /redfish/v1/: nothing proves it is Redfish yet
	stageLogin                // opening a session
	stageSession              // logged in
)

// classifyRedfish turns a gofish or transport error into a class and a
// message.
func classifyRedfish(err error, st stage) (failure.Class, string) {
	var collErr *schemas.CollectionError
	if errors.As(err, &collErr) && len(collErr.Failures) > 0 {
		// gofish fetches collection members in parallel and keeps every
		// failure; the first by URI stands for all of them.
		links := make([]string, 0, len(collErr.Failures))
		for l := range collErr.Failures {
			links = append(links, l)
		}
		sort.Strings(links)
		return classifyRedfish(collErr.Failures[links[0]], st)
	}
	var rfErr *schemas.Error
	if errors.As(err, &rfErr) {
		return classifyStatus(rfErr, st)
	}
	if class, msg, ok := classifyNet(err, st == stageSession); ok {
		return class, msg
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || strings.Contains(err.Error(), "malformed HTTP response") ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		if st == stageRoot {
			return failure.ProtocolMismatch, fmt.Sprintf("the answer is not Redfish JSON (%s); is this port a Redfish service?", rootCause(err))
		}
		return failure.Transient, fmt.Sprintf("the BMC sent a malformed answer: %s", rootCause(err))
	}
	return failure.Transient, rootCause(err)
}

func classifyStatus(e *schemas.Error, st stage) (failure.Class, string) {
	code := e.HTTPReturnedStatusCode
	msg := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	if detail := redfishMessage(e); detail != "" {
		msg += ": " + detail
	}
	switch {
	case code == http.StatusUnauthorized:
		return failure.Unauthorized, "the BMC refused the user name or password (" + msg + ")"
	case code == http.StatusForbidden:
		return failure.Unauthorized, "the user lacks the privilege for this operation (" + msg + ")"
	case code == http.StatusNotFound && st == stageRoot:
		return failure.ProtocolMismatch, "no Redfish service root at /redfish/v1/ (" + msg + ")"
	case code == http.StatusNotFound, code == http.StatusMethodNotAllowed, code == http.StatusNotImplemented:
		return failure.Unsupported, msg
	case code == http.StatusTooManyRequests, code >= 500:
		return failure.Transient, msg
	case code >= 400:
		return failure.Invalid, msg
	}
	return failure.Transient, msg
}

// redfishMessage picks the most specific human text of a Redfish error,
// cut short: a non-Redfish server may answer with a whole HTML page.
func redfishMessage(e *schemas.Error) string {
	msg := e.Message
	for _, info := range e.ExtendedInfos {
		if info.Message != "" {
			msg = info.Message
			break
		}
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return msg
}
