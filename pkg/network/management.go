// Package network is the pure logic of the networking chain: what a network
// type means for each port, and where Harvester's management network runs.
package network

import (
	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// IsLayer2 reports whether the type leaves the server without layer-3
// addresses once converged.
func IsLayer2(networkType string) bool {
	return networkType == equinixv1.NetworkTypeLayer2Bonded || networkType == equinixv1.NetworkTypeLayer2Individual
}
