package main

import (
	"fmt"
	"strconv"
	"strings"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// ownedBMC is an owned server's simulated BMC, as the scenario counts it.
type ownedBMC interface {
	// connection is the Inventory's way to the BMC.
	connection() seederv1alpha1.Connection
	// position is where the BMC's logs stand, for a later tallyFrom.
	position() ownedPosition
	// tallyFrom adds what the BMC got since p to t.
	tallyFrom(p ownedPosition, t *ownedTally)
	// linesFrom are the requests since p, one a line.
	linesFrom(p ownedPosition) []string
	off() bool
	close()
}

// ownedPosition is the length of each of a BMC's logs (which logs is the
// BMC's business).
type ownedPosition [3]int

// redfishOwned is the project's Redfish responder, which records every
// request, and its reset log, which says what each reset asked for.
type redfishOwned struct{ rf *ownedfleet.Redfish }

func addRedfishOwned(fleet *ownedfleet.Fleet, spec ownedfleet.Spec) (ownedBMC, error) {
	rf, err := fleet.AddRedfish(spec, bmcBenchUser, bmcBenchPassword, bmcsim.Options{})
	if err != nil {
		return nil, err
	}
	return redfishOwned{rf: rf}, nil
}

// addRedfishMediaOwned is the Redfish responder with virtual media under
// its system: the controller boots the server from the image it inserts.
func addRedfishMediaOwned(fleet *ownedfleet.Fleet, spec ownedfleet.Spec) (ownedBMC, error) {
	rf, err := fleet.AddRedfish(spec, bmcBenchUser, bmcBenchPassword, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem})
	if err != nil {
		return nil, err
	}
	return redfishOwned{rf: rf}, nil
}

func (r redfishOwned) connection() seederv1alpha1.Connection {
	return seederv1alpha1.Connection{Host: r.rf.Server.Host, Port: r.rf.Server.Port, CABundle: string(r.rf.Server.CACertPEM)}
}

func (r redfishOwned) position() ownedPosition {
	return ownedPosition{len(r.rf.BMC.RequestLog()), len(r.rf.BMC.ResetLog()), 0}
}

func (r redfishOwned) tallyFrom(p ownedPosition, t *ownedTally) {
	for _, reset := range r.rf.BMC.ResetLog()[p[1]:] {
		switch reset.Type {
		case "On", "ForceOn":
			t.powerOn++
		case "ForceOff", "GracefulShutdown", "PushPowerButton":
			t.powerOff++
		default:
			t.otherCommand++
		}
	}
	for _, req := range r.rf.BMC.RequestLog()[p[0]:] {
		method, path, _ := strings.Cut(req, " ")
		switch {
		case method == "GET":
			t.reads++
		case method == "PATCH" && strings.Contains(path, "/Systems/"):
			t.bootOverride++
		case method == "POST" && strings.HasSuffix(path, "ComputerSystem.Reset"):
			// Counted from the reset log, by its type.
		case method == "POST" && strings.HasSuffix(path, "VirtualMedia.InsertMedia"):
			t.insertMedia++
		case method == "POST" && strings.HasSuffix(path, "VirtualMedia.EjectMedia"):
			t.ejectMedia++
		case method == "POST" && strings.HasSuffix(path, "/SessionService/Sessions"):
			t.logins++
		case method == "DELETE" && strings.Contains(path, "/SessionService/Sessions/"):
			t.logouts++
		default:
			t.otherCommand++
		}
	}
	t.most = max(t.most, r.rf.BMC.Logins().MostSessions)
}

func (r redfishOwned) linesFrom(p ownedPosition) []string { return r.rf.BMC.RequestLog()[p[0]:] }
func (r redfishOwned) off() bool                          { return r.rf.BMC.PowerState() == "Off" }
func (r redfishOwned) close()                             { _ = r.rf.Close() }

// ipmiOwned is OpenIPMI's ipmi_sim, whose trace records every request in a
// session, behind the relay that sees the sessions.
type ipmiOwned struct{ ipmi *ownedfleet.IPMI }

func addIPMIOwned(fleet *ownedfleet.Fleet, spec ownedfleet.Spec) (ownedBMC, error) {
	b, err := fleet.AddIPMI(spec, bmcBenchUser, bmcBenchPassword, ipmisim.Options{})
	if err != nil {
		return nil, err
	}
	return ipmiOwned{ipmi: b}, nil
}

func (b ipmiOwned) connection() seederv1alpha1.Connection { return relayedIPMIConnection(b.ipmi.Relay) }

func (b ipmiOwned) position() ownedPosition {
	return ownedPosition{len(b.ipmi.Sim.Messages()), len(b.ipmi.Relay.Sessions()), b.ipmi.Relay.Sent()}
}

// IPMI commands the scenario tells apart (NetFn, command).
const (
	ipmiChassisControl = 0x0002 // chassis 02h
	ipmiSetBootOptions = 0x0008 // chassis 08h
)

// tallyFrom counts by IPMI command: Chassis Control by its control byte
// (01h power up, 00h power down or 05h soft off), Set System Boot Options
// with parameter 5 (the boot flags) as the boot override and with any
// other parameter as another command; anything not known to be a read
// counts as another command. A login is a session the relay saw open.
// ipmi_sim answers a session's own requests (Set Session Privilege Level,
// Close Session) in its LAN layer, which it does not trace: they are among
// the datagrams the relay counts, with the session setup, and not apart.
func (b ipmiOwned) tallyFrom(p ownedPosition, t *ownedTally) {
	for _, m := range b.ipmi.Sim.Messages()[p[0]:] {
		t.addIPMI(m)
	}
	t.logins += len(b.ipmi.Relay.Sessions()) - p[1]
	t.datagrams += b.ipmi.Relay.Sent() - p[2]
	t.most = max(t.most, b.ipmi.Relay.MostSessions())
}

// addIPMI counts one request ipmi_sim traced.
func (t *ownedTally) addIPMI(m ipmisim.Message) {
	first := firstByte(m.Data)
	switch key := uint16(m.NetFn)<<8 | uint16(m.Cmd); {
	case key == ipmiChassisControl && first == 0x01:
		t.powerOn++
	case key == ipmiChassisControl && (first == 0x00 || first == 0x05):
		t.powerOff++
	case key == ipmiSetBootOptions && first >= 0 && first&0x7f == 5:
		t.bootOverride++
	case ownedfleet.IPMIRead(m):
		t.reads++
	default:
		t.otherCommand++
	}
}

// firstByte is the first of a traced request's data bytes; -1 for none.
func firstByte(data string) int {
	f := strings.Fields(data)
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseUint(f[0], 16, 8)
	if err != nil {
		return -1
	}
	return int(v)
}

func (b ipmiOwned) linesFrom(p ownedPosition) []string {
	var out []string
	for _, m := range b.ipmi.Sim.Messages()[p[0]:] {
		out = append(out, fmt.Sprintf("%02x/%02x %s", m.NetFn, m.Cmd, m.Data))
	}
	return out
}

func (b ipmiOwned) off() bool {
	on, err := b.ipmi.Sim.PowerOn()
	return err == nil && !on
}

func (b ipmiOwned) close() { _ = b.ipmi.Close() }
