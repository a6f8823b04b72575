// Package hardware is the hardware kit: what Seeder's embedded mode gives
// on-prem nodes, as steps any chain runs on the servers under its nodes.
// The Steps put a machine's facts on its Node (the manufacturer, model and
// serialNumber labels the Harvester UI reads, and the specs as
// annotations), forward the machine's events as Kubernetes Events, each
// exactly once, carry out power requests (only while a joined node is in
// Harvester maintenance mode, one call per request), put a node whose
// server the provider is about to take back into maintenance mode at once,
// and signal the machine's health.
//
// The steps talk to machines through pkg/machine only, and work on a
// Target (target.go): a pass over an object whose status embeds
// hardwarev1.HardwareStatus. Two run them: the provider of Equinix Metal devices
// (package provision/equinixmetal), at the end of each pass over an
// Instance, whose machine is its device (package metaldriver), and the
// Inventories' chain (package inventory) on Seeder's Inventories, servers
// the addon did not provision, whose machine is their BMC (package
// bmcdriver).
package hardware
