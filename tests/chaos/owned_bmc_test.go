package chaos

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// ownedBMC is an owned server's BMC as the campaign drives and reads it:
// the project's Redfish responder, or OpenIPMI's ipmi_sim behind a relay.
// Both are read from the BMC's side, so every command that reached one is
// seen, whatever the controller made of its answer.
type ownedBMC interface {
	// protocol names the BMC's kind in messages.
	protocol() string
	// connection is how an Inventory reaches the BMC (its Secret apart).
	connection() seederv1alpha1.Connection
	// powerCommands are the power commands the BMC carried out or was
	// sent, in order.
	powerCommands() []bmcCommand
	// networkBoots are when the host started from the network, or from
	// a boot image (virtual CD, UEFI HTTP boot).
	networkBoots() []time.Time
	// changes are the requests that change the BMC or its host (a boot
	// override or a power command), which a foreign server must never get.
	changes() []string
	poweredOn() (bool, error)
	// fault makes the BMC misbehave as the step says, and tells how.
	fault(kind ownedKind, pick int) string
	clearFaults()
	// sessions are the BMC's sessions, when each was in use.
	sessions() []bmcsim.Span
	close() error
}

// bmcCommand is one power command a BMC got.
type bmcCommand struct {
	what string
	at   time.Time
}

// redfishBMC is the project's Redfish responder; media follows its
// virtual CD, when it has one.
type redfishBMC struct {
	rf    *ownedfleet.Redfish
	media *mediaLog
}

func (b redfishBMC) protocol() string { return "Redfish" }

func (b redfishBMC) connection() seederv1alpha1.Connection {
	srv := b.rf.Server
	return seederv1alpha1.Connection{Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM)}
}

func (b redfishBMC) powerCommands() []bmcCommand {
	var out []bmcCommand
	for _, x := range b.rf.BMC.ResetLog() {
		out = append(out, bmcCommand{what: x.Type, at: x.At})
	}
	return out
}

func (b redfishBMC) networkBoots() []time.Time { return networkBoots(b.rf.BMC.PowerTransitions()) }

func (b redfishBMC) changes() []string {
	var out []string
	for _, req := range b.rf.BMC.RequestLog() {
		if strings.HasPrefix(req, "PATCH ") || strings.HasPrefix(req, "POST /redfish/v1/Systems") {
			out = append(out, req)
		}
	}
	return out
}

func (b redfishBMC) poweredOn() (bool, error) { return b.rf.BMC.PowerState() != "Off", nil }

func (b redfishBMC) fault(kind ownedKind, _ int) string {
	switch kind {
	case ownRefuse:
		b.rf.BMC.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized, PathPrefix: "/redfish/v1/Systems", Count: 1})
		return "the next system request is refused (401)"
	case ownFail:
		b.rf.BMC.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultServerError, Method: "POST", Count: 1})
		return "the next command fails (500)"
	case ownLost:
		// The command is carried out after the controller gave up on the
		// answer: a lost answer.
		b.rf.BMC.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLatency, Latency: 2 * bmcTimeout, Count: 1})
		return "the next request is answered after --bmc-timeout"
	}
	return "no such fault"
}

func (b redfishBMC) clearFaults() { b.rf.BMC.ClearFaults() }

func (b redfishBMC) sessions() []bmcsim.Span { return b.rf.BMC.SessionSpans() }

func (b redfishBMC) close() error { return b.rf.Close() }

// ipmiBMC is ipmi_sim behind a relay; the Inventory names the relay.
type ipmiBMC struct{ b *ownedfleet.IPMI }

func (b ipmiBMC) protocol() string { return "IPMI" }

func (b ipmiBMC) connection() seederv1alpha1.Connection {
	return seederv1alpha1.Connection{Host: b.b.Endpoint.Host, Port: seederv1alpha1.IPMIPort,
		ProviderOptions: &seederv1alpha1.ProviderOptions{IPMITOOL: &seederv1alpha1.IPMITOOLOptions{Port: b.b.Endpoint.Port}}}
}

// chassisControls names a Chassis Control's byte.
var chassisControls = map[byte]string{0: "power down", 1: "power up", 2: "power cycle", 3: "hard reset", 5: "soft off"}

// powerCommands are the Chassis Controls the BMC received, as its trace
// showed them: whether or not the answer reached the controller.
func (b ipmiBMC) powerCommands() []bmcCommand {
	var out []bmcCommand
	for _, c := range b.b.Sim.ChassisControlLog() {
		what, ok := chassisControls[c.Byte]
		if !ok {
			what = fmt.Sprintf("chassis control %#x", c.Byte)
		}
		out = append(out, bmcCommand{what: what, at: c.At})
	}
	return out
}

func (b ipmiBMC) networkBoots() []time.Time { return networkBoots(b.b.Sim.PowerTransitions()) }

// changes are the traced requests that are no reads: boot options set,
// chassis controls, and anything else the client does not send to read.
func (b ipmiBMC) changes() []string { return b.b.Commands(0) }

func (b ipmiBMC) poweredOn() (bool, error) { return b.b.Sim.PowerOn() }

// fault plays what a relay can: answers held back. Past --bmc-timeout the
// commands are carried out and their answers lost; below it, a slow BMC.
// IPMI has no HTTP status to refuse or fail with.
func (b ipmiBMC) fault(kind ownedKind, pick int) string {
	delay, what := 400*time.Millisecond, "answers slowly (400 ms)"
	if kind == ownLost {
		delay, what = bmcTimeout+time.Second, "answers after --bmc-timeout"
	}
	b.b.Relay.SetDelay(delay)
	lasts := time.Duration(500+pick%1000) * time.Millisecond
	time.AfterFunc(lasts, func() { b.b.Relay.SetDelay(0) })
	return fmt.Sprintf("%s for %s", what, lasts)
}

func (b ipmiBMC) clearFaults() { b.b.Relay.SetDelay(0) }

func (b ipmiBMC) sessions() []bmcsim.Span { return b.b.Relay.Sessions() }

func (b ipmiBMC) close() error { return b.b.Close() }

func networkBoots(ts []bmcsim.PowerTransition) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if t.NetworkBoot() || t.BootImage() != "" {
			out = append(out, t.At)
		}
	}
	return out
}

// inventoryConnection is the Inventory's connection to s's BMC with the
// Secret of its credentials.
func inventoryConnection(s *ownedServer) seederv1alpha1.Connection {
	conn := s.bmc.connection()
	conn.AuthSecretRef = corev1.SecretReference{Namespace: ownedSecrets, Name: s.spec.Name}
	return conn
}
