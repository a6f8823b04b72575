// Package v1 holds the record of a server's hardware and power that both
// API groups embed: an Instance's status (equinix.harvesterhci.io) and an
// Inventory's status.hardware (metal.harvesterhci.io, Seeder's kind), which
// the same hardware steps keep. Nothing is served under it: each group's
// CRDs carry its fields as their own. Its group name only titles its
// section of the API reference (docs/api-reference.md), where both groups'
// fields link to it.
//
// +kubebuilder:object:generate=true
// +groupName=hardware.harvesterhci.io
package v1
