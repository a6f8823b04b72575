package ownedfleet

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// IPMI is OpenIPMI's ipmi_sim behind a relay. ipmi_sim's trace shows the
// requests of a session (Sim.Messages) but not the sessions themselves,
// which the relay sees (Relay.Sessions, Relay.MostSessions): clients are to
// reach the BMC through the relay, as Endpoint does.
type IPMI struct {
	Sim   *ipmisim.Sim
	Relay *ipmisim.Relay
	// Endpoint is the BMC, through the relay, for pkg/bmc. An Inventory
	// reaches it as framework.IPMIInventory writes it: 127.0.0.1 with
	// the relay's port among the ipmitool options.
	Endpoint bmc.Endpoint
	// tempDir is the folder StartIPMI made for the BMC's state; Close
	// removes it.
	tempDir string
}

// StartIPMI starts ipmi_sim with opts (Username and Password required)
// behind a relay. Without opts.Dir its state lives in a temporary folder
// that Close removes. ipmisim.ErrNotInstalled says ipmi_sim is missing.
func StartIPMI(opts ipmisim.Options) (*IPMI, error) {
	b := &IPMI{}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "ownedfleet-ipmi-")
		if err != nil {
			return nil, fmt.Errorf("a folder for ipmi_sim: %w", err)
		}
		b.tempDir, opts.Dir = dir, dir
	}
	sim, err := ipmisim.Start(opts)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.Sim = sim
	if b.Relay, err = ipmisim.NewRelay(fmt.Sprintf("%s:%d", sim.Host, sim.Port)); err != nil {
		_ = b.Close()
		return nil, err
	}
	b.Endpoint = bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: "127.0.0.1", Port: b.Relay.Port(),
		Username: opts.Username, Password: redact.Sensitive(opts.Password)}
	return b, nil
}

// Close stops the relay and ipmi_sim, and removes the folder StartIPMI
// made.
func (b *IPMI) Close() error {
	var errs []error
	if b.Relay != nil {
		errs = append(errs, b.Relay.Close())
	}
	if b.Sim != nil {
		errs = append(errs, b.Sim.Stop())
	}
	if b.tempDir != "" {
		errs = append(errs, os.RemoveAll(b.tempDir))
	}
	return errors.Join(errs...)
}

// AddIPMI gives spec an ipmi_sim BMC (its system GUID spec.UUID) behind a
// relay, powered off, and adds the server behind it. The host is a power
// switch: opts.Host must be nil, the server is the fleet's.
func (f *Fleet) AddIPMI(spec Spec, username, password string, opts ipmisim.Options) (*IPMI, error) {
	if opts.Host != nil {
		return nil, fmt.Errorf("BMC of %s: the fleet plays the host; ipmisim.Options.Host must be nil", spec.Name)
	}
	opts.Username, opts.Password, opts.UUID = username, password, spec.UUID
	b, err := StartIPMI(opts)
	if err != nil {
		return nil, fmt.Errorf("BMC of %s: %w", spec.Name, err)
	}
	// A free server waits powered off (ipmi_sim starts on).
	if err := b.Sim.SetPower(false); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("BMC of %s: %w", spec.Name, err)
	}
	if err := f.Add(spec, b.Sim); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// RequireIPMI is AddIPMI for a test, whose end closes the BMC. Without
// ipmi_sim the test is judged as ipmisim.Require judges it: failed under
// CI=true, skipped otherwise.
func (f *Fleet) RequireIPMI(t testing.TB, spec Spec, username, password string) *IPMI {
	t.Helper()
	b, err := f.AddIPMI(spec, username, password, ipmisim.Options{Dir: t.TempDir()})
	if errors.Is(err, ipmisim.ErrNotInstalled) {
		ipmisim.Require(t, ipmisim.Options{})
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close the BMC of %s: %v", spec.Name, err)
		}
	})
	return b
}

// ipmiReads are the requests that change nothing on the BMC which the
// project's client sends, by NetFn and command: status, identity, system
// info, sensors, the event log and its reservations, boot options read
// back.
var ipmiReads = map[uint16]bool{
	0x0000: true, 0x0001: true, 0x0009: true, // chassis capabilities, status, boot options
	0x0601: true, 0x0604: true, 0x0637: true, 0x0638: true, 0x063d: true, 0x0642: true, // device ID, self test, GUID, auth caps, session and channel info
	0x0659: true,                                                         // system info parameters (the host's name and OS, read with the facts)
	0x0a10: true, 0x0a11: true, 0x0a20: true, 0x0a22: true, 0x0a23: true, // FRU, SDR repository
	0x0a40: true, 0x0a42: true, 0x0a43: true, 0x0a48: true, // event log info, reservation, entries, time
	0x0427: true, 0x0429: true, 0x042b: true, 0x042d: true, 0x042f: true, // sensor thresholds, event enables and status, reading, type
	0x0c02: true, // LAN configuration
}

// IPMIRead says whether a request ipmi_sim traced is one the project's
// client sends only to read; anything else may change the BMC or the host.
func IPMIRead(m ipmisim.Message) bool { return ipmiReads[uint16(m.NetFn)<<8|uint16(m.Cmd)] }

// Commands are the requests the BMC received, from the from-th traced one
// on, that are no reads (IPMIRead), in order, each as "NetFn/command data"
// in hex: "00/02 01" is a Chassis Control power up.
func (b *IPMI) Commands(from int) []string {
	var out []string
	for _, m := range b.Sim.Messages()[from:] {
		if !IPMIRead(m) {
			out = append(out, fmt.Sprintf("%02x/%02x %s", m.NetFn, m.Cmd, m.Data))
		}
	}
	return out
}
