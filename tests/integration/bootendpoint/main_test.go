// Package bootendpoint proves, with two real binaries on a real
// kube-apiserver under the chart's RBAC, that the boot endpoint of the
// servers people own answers on every replica: a standby forwards to the
// leader it reads from the leader Lease, answers 503 when there is none,
// and answers itself once it leads.
package bootendpoint

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
