// Package inventory proves the hardware mode's chain on a real
// kube-apiserver, on the objects Harvester's UI and node actions write:
// Seeder's Inventories in harvester-system, named after their node, each
// with a real BMC implementation behind it (the project's Redfish responder
// through gofish, OpenIPMI's ipmi_sim through go-ipmi), their credentials
// in an unlabelled Secret of any namespace. Nodes get their facts as
// labels, their health changes and event log entries as Events exactly
// once across polls and a controller restart, power requests one command
// each and only in maintenance mode, and Inventories recover from a BMC
// that is unreachable, refuses the credentials or is slow. The controller
// runs under the RBAC of the chart's harvester-seeder install.
package inventory

import (
	"os"
	"testing"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(framework.RunMain(m, cluster.Options{AuditLog: true}, &shared))
}
