// Package ownedvm grows, shrinks and heals a pool of servers people own
// whose BMCs offer virtual media, on a network with no DHCP server: each
// server is a QEMU machine under OVMF (UEFI) behind a test BMC
// (tests/sim/qemubmc) that the real controller drives through Redfish, on
// a real kube-apiserver. The machine boots the addon's image from its
// virtual CD, iPXE applies the static address the pool's AddressPool gave
// the server and fetches its installer script from the controller's boot
// endpoint; the test plays the installer and the kubelet from there. A
// capture of each machine's network counts the DHCP packets: none.
package ownedvm

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
