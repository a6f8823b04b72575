package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// ownedSimDemo is the owned-server demo without QEMU: three servers behind
// simulated Redfish BMCs that PXE-boot into the boot endpoint as iPXE
// does and install when powered on with a one-time network boot
// (tests/sim/ownedfleet, as the owned-pool tests and benchmark have
// them). It runs wherever Go does, in under a minute.
func ownedSimDemo(ctx context.Context, d *demoRun) error {
	return d.runOwned(ctx, ownedBoot{}, d.startRedfishRack)
}

// redfishRack is the servers behind simulated Redfish BMCs.
type redfishRack []*ownedfleet.Redfish

// startRedfishRack starts the three servers, switched off, each behind a
// simulated Redfish BMC, which PXE-boot into the boot endpoint at
// ipxeAddr when powered on with a one-time network boot.
func (d *demoRun) startRedfishRack(ctx context.Context, ipxeAddr string) (*ownedfleet.Fleet, ownedRack, error) {
	fleet, err := d.ownedFleet(ctx, ipxeAddr, nil)
	if err != nil {
		return nil, nil, err
	}
	say("starting three servers, switched off, each behind a simulated Redfish BMC; powered on to a network boot, one asks the boot endpoint as iPXE does, installs (%s) and registers its Node", d.installTime)
	var rack redfishRack
	for _, spec := range ownedServers {
		r, err := fleet.AddRedfish(spec, ownedBMCUser, ownedBMCPassword, bmcsim.Options{})
		if err != nil {
			rack.close()
			return nil, nil, err
		}
		rack = append(rack, r)
		fmt.Fprintf(os.Stderr, "    %s: BMC %s, NIC %s, disk %s, power %s\n", spec.Name, r.Server.URL, spec.MAC, spec.Disk, r.BMC.PowerState())
	}
	return fleet, rack, nil
}

// inventories are examples/owned-servers.yaml's Redfish Inventories, each
// BMC's own CA in caBundle.
func (r redfishRack) inventories() (apply, shown string) {
	var file, show strings.Builder
	for i, b := range r {
		connection := fmt.Sprintf("      host: %s\n      port: %d\n      insecureTLS: false\n      caBundle: |\n", b.Server.Host, b.Server.Port)
		file.WriteString(ownedInventory(ownedServers[i], "", connection+indentPEM(b.Server.CACertPEM)))
		show.WriteString(ownedInventory(ownedServers[i], "", connection+"        <the BMC's CA certificate, PEM>\n"))
	}
	return file.String(), show.String()
}

// failure: the fleet plays these servers' boots, and records their
// failures itself.
func (r redfishRack) failure() error { return nil }

func (r redfishRack) off(i int) bool { return r[i].BMC.PowerState() == "Off" }
func (r redfishRack) power(i int) string {
	return "power " + r[i].BMC.PowerState() + " (the simulated BMC)"
}
func (r redfishRack) transitions(i int) []bmcsim.PowerTransition {
	return r[i].BMC.PowerTransitions()
}

func (r redfishRack) close() {
	for _, b := range r {
		_ = b.Close()
	}
}

func indentPEM(pem []byte) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(pem), "\n"), "\n") {
		out.WriteString("        " + line + "\n")
	}
	return out.String()
}
