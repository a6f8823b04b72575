// Package lifecycle proves the provisioning chain survives what happens to a
// real controller: SIGKILL at every step, lost answers, bad or rotated
// credentials, missing join information and devices that fail.
package lifecycle

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
