package ownedfleet

import (
	"fmt"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// Redfish is a server's simulated Redfish BMC.
type Redfish struct {
	BMC    *bmcsim.BMC
	Server *bmcsim.Server
	// Endpoint is the BMC for pkg/bmc (and an Inventory's connection).
	Endpoint bmc.Endpoint
}

// Close stops the BMC's listener.
func (r *Redfish) Close() error { return r.Server.Close() }

// AddRedfish gives spec a Redfish BMC (the default hardware, its first
// NIC spec.MAC and its UUID spec.UUID), powered off, and adds the server
// behind it.
func (f *Fleet) AddRedfish(spec Spec, username, password string, opts bmcsim.Options) (*Redfish, error) {
	hw := bmcsim.DefaultHardware()
	if opts.Hardware != nil {
		hw = *opts.Hardware
	}
	hw.UUID = spec.UUID
	if len(hw.NICs) == 0 {
		hw.NICs = []bmcsim.NIC{{ID: "NIC1", SpeedMbps: 25000}}
	}
	hw.NICs[0].MAC = strings.ToLower(spec.MAC)
	opts.Hardware, opts.Username, opts.Password = &hw, username, password
	b := bmcsim.New(opts)
	// A free server waits powered off (the responder starts on).
	if err := b.SetPowerState("Off"); err != nil {
		return nil, fmt.Errorf("BMC of %s: %w", spec.Name, err)
	}
	srv, err := bmcsim.NewServer(b, "")
	if err != nil {
		return nil, fmt.Errorf("BMC of %s: %w", spec.Name, err)
	}
	if err := f.Add(spec, b); err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &Redfish{BMC: b, Server: srv, Endpoint: bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port,
		CABundle: srv.CACertPEM, Username: username, Password: redact.Sensitive(password)}}, nil
}
