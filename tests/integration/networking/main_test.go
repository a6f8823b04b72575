// Package networking tests the networking chain end to end: pools of each of
// the seed's network types are provisioned against the simulator, and the
// ports are read back through the real equinix-sdk-go client.
package networking

import (
	"os"
	"testing"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}
