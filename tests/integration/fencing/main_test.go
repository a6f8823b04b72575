// Package fencing proves fencing (--fencing, the hardware mode) on a real
// kube-apiserver with real BMCs (the project's Redfish responder through
// gofish, OpenIPMI's ipmi_sim through go-ipmi): a node with an Inventory
// that stays NotReady past the grace period has its server switched off
// with exactly one command and only then its Node tainted out-of-service;
// the taint goes when the node is Ready again; and each guard holds: the
// bound, the quorum, the controller's own node, maintenance mode, a BMC
// that cannot confirm the server off, and a restart after the intent was
// stored. The controller runs under the RBAC of the chart's
// harvester-seeder install.
package fencing

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
