package metalsim

import (
	"fmt"
	"strings"
)

// apiError is an error a handler answers with. The API used two body
// shapes, {"error":"msg"} and {"errors":["a","b"]}; plural picks the second,
// which the real service used for validation failures.
type apiError struct {
	status int
	msgs   []string
	plural bool
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s", e.status, strings.Join(e.msgs, ", "))
}

func errStatus(status int, format string, args ...any) error {
	return &apiError{status: status, msgs: []string{fmt.Sprintf(format, args...)}}
}

// errInvalid is a 422 with the {"errors":[...]} shape.
func errInvalid(msgs ...string) error {
	return &apiError{status: 422, msgs: msgs, plural: true}
}

// errConflict is a 422 with the {"error":"..."} shape, used for state
// conflicts: the API has no 409.
func errConflict(format string, args ...any) error {
	return errStatus(422, format, args...)
}

func errNotFound() error { return errStatus(404, "Not found") }
