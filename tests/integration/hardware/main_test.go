// Package hardware proves the hardware chain on a real kube-apiserver and
// the Metal simulator through the real SDK, and through the real binary
// where a restart or a SIGKILL matters: the facts on the Node, each device
// event forwarded once, power requests that wait for maintenance mode and
// send one call, servers off on request kept, and spot servers replaced
// before the platform takes them back.
package hardware

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
