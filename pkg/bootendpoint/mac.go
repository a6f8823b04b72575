package bootendpoint

import (
	"encoding/hex"
	"net"
	"strings"
)

// normalMAC turns any form iPXE prints a MAC in into the canonical
// lower-case aa:bb:cc:dd:ee:ff: ${mac} (colons), ${mac:hexhyp}
// (hyphens), ${mac:hexraw} (twelve hex digits), in either case. Only
// Ethernet's six bytes are a server's MAC.
func normalMAC(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 12 {
		b, err := hex.DecodeString(s)
		if err != nil {
			return "", false
		}
		return net.HardwareAddr(b).String(), true
	}
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return "", false
	}
	return hw.String(), true
}

// sameUUID compares SMBIOS UUIDs as iPXE and BMCs print them: the same
// hex digits, in either case, with or without hyphens or braces.
func sameUUID(a, b string) bool {
	clean := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "{", "", "}", "").Replace(strings.TrimSpace(s)))
	}
	ca := clean(a)
	return ca != "" && ca == clean(b)
}
