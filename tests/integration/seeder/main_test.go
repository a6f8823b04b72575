// Package seeder proves the move from Harvester's own Seeder to the addon
// and back on a real kube-apiserver, with what Seeder leaves planted
// exactly as the version Harvester v1.8.0 bundles writes it
// (framework.SeederVersion): its CRDs under its object-set marks, its
// leader-election Lease, its admission webhook owned by its CA Secret, its
// Service, and on each Inventory its finalizer, its rufio Machine and its
// status. Removing what the Addon's removal removes then leaves the
// controller to take over; starting Seeder again leaves it standing back.
// And Harvester's own upgrade step (package/upgrade/lib.sh upgrade_addon of
// Harvester v1.8.0, run by bash) on the Addon the addon is installed as.
// The controller runs under the RBAC of the chart's harvester-seeder
// install.
package seeder

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
