// Package ownedpools proves the InstancePools of servers people own on a
// real kube-apiserver: the hardware mode (--owned-pools) claims
// Inventories exactly once, sets a one-time network boot and powers the
// server on through its BMC (the project's Redfish responder, through
// gofish), waits for the Node, and on scale-down powers the server off and
// frees the Inventory; the equinix mode leaves such pools alone.
package ownedpools

import (
	"os"
	"testing"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(framework.RunMain(m, cluster.Options{}, &shared))
}
