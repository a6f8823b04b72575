package bmc

import (
	"fmt"
	"io"
	"strconv"
)

// Sensitive is a string that never prints: every fmt verb shows
// "<redacted>" (or nothing when empty), so an Endpoint logged with %v, %+v
// or %#v cannot leak the BMC password. Convert with string(s) to read it.
// It mirrors the Metal client's type on purpose instead of importing it:
// this package must not depend on the Metal client.
type Sensitive string

// String implements fmt.Stringer.
func (s Sensitive) String() string {
	if s == "" {
		return ""
	}
	return "<redacted>"
}

// GoString implements fmt.GoStringer for %#v.
func (s Sensitive) GoString() string { return strconv.Quote(s.String()) }

// Format implements fmt.Formatter: without it a verb that does not suit a
// string (%d, %x) would print the raw value.
func (s Sensitive) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// MarshalText keeps the password out of JSON and YAML renderings too.
func (s Sensitive) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
