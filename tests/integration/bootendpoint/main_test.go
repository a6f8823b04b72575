// Package bootendpoint proves, with the real binary on a real
// kube-apiserver under the chart's RBAC, that the iPXE Service of the
// servers people own can only reach a replica that serves the boot
// endpoint: the leader labels its own pod once it listens, and a replica
// that is not leading (a standby, or a former leader restarted) removes
// the label before it reports ready.
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
