// Package bmcinventory proves the hardware chain's BMC driver on a real
// kube-apiserver: nodes the addon did not provision, each with a real BMC
// implementation behind it (the project's Redfish responder through
// gofish, OpenIPMI's ipmi_sim through go-ipmi), get their facts as labels,
// their health changes and event log entries as Events exactly once across
// polls and a controller restart, their power switched only in maintenance
// mode with one command per request, and recover from a BMC that is
// unreachable, refuses the credentials or is slow. The CRD's validation
// rules are checked here too.
package bmcinventory

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
