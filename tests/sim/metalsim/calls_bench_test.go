package metalsim

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// BenchmarkCallsByFleetSize is one server's calls, in the order the
// controller makes them, at 10 and at 2,000 devices: the adoption list by
// pool tag, the create, reads, the VLAN list, a disbond and a VLAN assign,
// the update, the reinstall, a conversion to layer 2, the list by the
// server's own tag, the delete, and a page of ten of the project's brief
// list (a page the same size at both sizes).
// Device timings are zero, as in the bench, so each step completes on the
// next access. One op is the whole mix; ns/call divides it by its calls.
// The figures at both sizes should be close (make bench's simcost scenario
// measures the same through the SDK):
//
//	go test -run '^$' -bench CallsByFleetSize -benchtime 200x ./tests/sim/metalsim
func BenchmarkCallsByFleetSize(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f := newFleetWith(b, n, Timings{})
			calls := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for i := 0; b.Loop(); i++ {
				calls = f.serverMix(i)
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
		})
	}
}

// serverMix makes one server's calls and returns how many it made.
func (f *scaleFleet) serverMix(i int) int {
	calls := 0
	call := func(method, path string, body any, want int, out any) {
		f.call(method, path, body, want, out)
		calls++
	}
	pool := fmt.Sprintf("fleet-%04d", (i*7919)%len(f.ids))
	call(http.MethodGet, fmt.Sprintf("/projects/%s/devices%s&per_page=100&tag=pool:%s", testProject, deviceQuery, pool), nil, 200, nil)
	hostname := fmt.Sprintf("mix-%d", i)
	var d metalv1.Device
	call(http.MethodPost, "/projects/"+testProject+"/devices", ipxeInput(hostname), 201, &d)
	id := d.GetId()
	call(http.MethodGet, "/devices/"+id+deviceQuery, nil, 200, &d)
	call(http.MethodGet, "/projects/"+testProject+"/virtual-networks?metro=da", nil, 200, nil)
	eth1, bond0 := portNamed(d, "eth1"), portNamed(d, "bond0")
	call(http.MethodPost, "/ports/"+eth1+"/disbond", nil, 200, nil)
	call(http.MethodPost, "/ports/"+eth1+"/assign", metalv1.PortAssignInput{Vnid: ptr(f.vlans[0])}, 200, nil)
	call(http.MethodPut, "/devices/"+id+deviceQuery, metalv1.DeviceUpdateInput{IpxeScriptUrl: ptr(testIPXEURL), Userdata: ptr("#cloud-config\n")}, 200, nil)
	call(http.MethodPost, "/devices/"+id+"/actions", metalv1.DeviceActionInput{
		Type: metalv1.DEVICEACTIONINPUTTYPE_REINSTALL, OperatingSystem: ptr(OSCustomIPXE), IpxeScriptUrl: ptr(testIPXEURL),
		PreserveData: ptr(true), DeprovisionFast: ptr(true),
	}, 202, nil)
	call(http.MethodGet, "/devices/"+id+deviceQuery, nil, 200, nil)
	call(http.MethodPost, "/ports/"+bond0+"/convert/layer-2", nil, 200, nil)
	call(http.MethodGet, fmt.Sprintf("/projects/%s/devices%s&tag=pool:%s", testProject, deviceQuery, hostname), nil, 200, nil)
	call(http.MethodDelete, "/devices/"+id, nil, 204, nil)
	call(http.MethodGet, "/projects/"+testProject+"/devices?exclude=userdata,root_password,network_ports,ip_addresses,plan,metro,facility,operating_system&per_page=10", nil, 200, nil)
	// The deleted device goes on the next pass, as the bench's ticker
	// makes it go, so the fleet keeps its size.
	f.sim.Tick()
	return calls
}
