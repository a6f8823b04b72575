// Package redact keeps secrets (a BMC password, a Metal token, a join
// token in userdata, a BGP password) out of whatever prints them: logs,
// errors, conditions and Events. Both seams, pkg/metal and pkg/bmc, hold
// their secrets in a Sensitive and scrub answers that might echo one.
package redact

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Placeholder is what a secret prints as.
const Placeholder = "<redacted>"

// Sensitive is a string that never prints: every fmt verb shows
// Placeholder (or nothing when empty), so a struct holding one logged
// with %v, %+v or %#v cannot leak it. Convert with string(s) to read it.
type Sensitive string

// String implements fmt.Stringer.
func (s Sensitive) String() string {
	if s == "" {
		return ""
	}
	return Placeholder
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

// MarshalText keeps the secret out of JSON and YAML renderings too.
func (s Sensitive) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Scrub replaces every occurrence of secret in text with Placeholder, for
// a message that may echo what was sent (a server's error answer). An
// empty secret changes nothing.
func Scrub(text string, secret Sensitive) string {
	if secret == "" {
		return text
	}
	return strings.ReplaceAll(text, string(secret), Placeholder)
}
