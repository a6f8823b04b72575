package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// The IPMI requests of an owned server's life, as ipmi_sim traces them,
// fall where figure 9's minimum counts them: the boot flags are the boot
// override, a Chassis Control by its byte, a read apart; any other boot
// parameter, a power cycle or a command the tally does not know counts
// against the minimum.
func TestOwnedTallyOfIPMIRequests(t *testing.T) {
	var got ownedTally
	for _, m := range []ipmisim.Message{
		{NetFn: 0x00, Cmd: 0x08, Data: "05 a0 04 00 00 00"}, // boot flags: PXE, UEFI, next boot only
		{NetFn: 0x00, Cmd: 0x01},                            // Get Chassis Status
		{NetFn: 0x00, Cmd: 0x02, Data: "01"},                // power up
		{NetFn: 0x00, Cmd: 0x02, Data: "00"},                // power down
		{NetFn: 0x00, Cmd: 0x02, Data: "05"},                // soft off
		{NetFn: 0x00, Cmd: 0x08, Data: "03 01"},             // set in progress
		{NetFn: 0x00, Cmd: 0x02, Data: "02"},                // power cycle
		{NetFn: 0x0a, Cmd: 0x43, Data: "00 00 00 00 00 ff"}, // Get SEL Entry
		{NetFn: 0x06, Cmd: 0x59, Data: "00 01 00 00"},       // Get System Info Parameters, the host's name
		{NetFn: 0x0a, Cmd: 0x47, Data: "00 00 43 4c 52 aa"}, // Clear SEL
		{NetFn: 0x00, Cmd: 0x08},                            // no parameter at all
	} {
		got.addIPMI(m)
	}
	assert.Equal(t, ownedTally{bootOverride: 1, powerOn: 1, powerOff: 2, reads: 3, otherCommand: 4}, got)
}
