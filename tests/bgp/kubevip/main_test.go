//go:debug multipathtcp=0

// Package kubevip runs the real kube-vip, built from its pinned module by
// scripts/tools, against the test apiserver, with the controller and the
// Metal simulator. In ARP mode, as Harvester runs it, each node is a
// network namespace with a mgmt-br bridge, kube-vip takes lease
// plndr-svcs-lock and writes kube-vip.io/vipHost itself, and the cluster
// VIP's Elastic IP follows that annotation, across a failover. In BGP mode
// kube-vip reads the peering annotations the addon writes and peers on port
// 179 with the simulator's GoBGP top-of-rack, which then routes the
// Service's Elastic IP to the node's device.
//
// It needs root (network namespaces, port 179) and ip(8): without them it
// skips, except under CI=true, where it fails. The //go:debug line lets the
// top-of-rack's listeners check MD5 passwords (see tests/bgp/tor).
package kubevip

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
