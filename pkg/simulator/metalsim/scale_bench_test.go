package metalsim

import (
	"fmt"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/require"
)

// fleet builds n active devices in one metro, each carrying VLANs 1000 and
// 1001 on bond0 (hybrid-bonded), as a large pool leaves the simulator. Every
// VLAN is then shared by all n devices.
func fleet(b *testing.B, n int) (*env, []string) {
	b.Helper()
	e := newEnv(b)
	vlans := []string{e.createVLAN("da", 1000).GetId(), e.createVLAN("da", 1001).GetId()}
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		d := e.create(ipxeInput(fmt.Sprintf("fleet-%04d", i)))
		ids = append(ids, d.GetId())
	}
	t := DefaultTimings()
	e.clock.Advance(t.Queue + t.IPXEBoot)
	for _, id := range ids {
		bond0 := e.port(e.get(id), "bond0").GetId()
		for _, v := range vlans {
			_, _, err := e.client.PortsApi.AssignPort(e.ctx, bond0).PortAssignInput(metalv1.PortAssignInput{Vnid: ptr(v)}).Execute()
			require.NoError(b, err)
		}
	}
	return e, ids
}

// The calls a controller makes per server and per pool, at fleet sizes: their
// cost must not grow with the number of devices sharing a VLAN (go test
// -bench Fleet ./pkg/simulator/metalsim).
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{200, 2000} {
		e, ids := fleet(b, n)
		b.Run(fmt.Sprintf("GetDevice/devices=%d", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				_, _, err := e.client.DevicesApi.FindDeviceById(e.ctx, ids[i%len(ids)]).
					Include([]string{"plan", "metro", "operating_system", "hardware_reservation"}).Execute()
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("ListDevicesByTag/devices=%d", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				list, _, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).
					Tag(fmt.Sprintf("pool:fleet-%04d", i%n)).PerPage(100).Execute()
				require.NoError(b, err)
				require.Len(b, list.Devices, 1)
			}
		})
		b.Run(fmt.Sprintf("ListVLANs/devices=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, _, err := e.client.VLANsApi.FindVirtualNetworks(e.ctx, testProject).Metro("da").Execute()
				require.NoError(b, err)
			}
		})
	}
}
