// Package vip proves the cluster VIP's Elastic IP follows kube-vip on a real
// apiserver and the Metal simulator: moves under faults and a SIGKILL of the
// real binary between unassign and assign, reports of a VIP holder in
// maintenance or without a known server, credentials refused, foreign
// addresses left alone, deletion, and BGP peering annotations that a real
// BGP speaker (GoBGP) peers with.
package vip

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
