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
		s := ownedServers[i]
		inv := fmt.Sprintf(ownedInventoryYAML, s.Name, namespace, b.Server.Host, b.Server.Port, ownedBMCSecret, s.MAC, s.Disk, s.Arch)
		file.WriteString(strings.Replace(inv, "CA_BUNDLE", indentPEM(b.Server.CACertPEM), 1))
		show.WriteString(strings.Replace(inv, "CA_BUNDLE", "        <the BMC's CA certificate, PEM>\n", 1))
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

// ownedInventoryYAML is a Redfish Inventory of
// examples/owned-servers.yaml: %[1]s the server, %[2]s the namespace,
// %[3]s and %[4]d its BMC, %[5]s the BMC Secret, %[6]s the MAC, %[7]s the
// disk, %[8]s the arch; CA_BUNDLE stands for the BMC's CA, indented.
const ownedInventoryYAML = `---
apiVersion: metal.harvesterhci.io/v1alpha1
kind: Inventory
metadata:
  name: %[1]s
  namespace: %[2]s
  labels:
    rack: a
spec:
  baseboardSpec:
    connection:
      host: %[3]s
      port: %[4]d
      insecureTLS: false
      caBundle: |
CA_BUNDLE      authSecretRef: {namespace: %[2]s, name: %[5]s}
  events:
    enabled: true
    pollingInterval: 1h
  managementInterfaceMacAddress: %[6]q
  primaryDisk: %[7]s
  arch: %[8]s
`
