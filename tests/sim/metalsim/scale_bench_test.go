package metalsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/require"
)

// The scale benchmark measures the simulator's own handling time per call
// (the request served in-process, no TCP and no SDK decoding) for the calls
// a provisioning controller makes, at 10 and at 2,000 devices. The cost of a
// call must not grow with the fleet: compare the two sizes of each call.
//
//	go test -run '^$' -bench Scale -benchtime 2000x -count 3 ./tests/sim/metalsim
//
// On a shared machine wall time is noisy: cpu-ns/op (the process's CPU
// time per call, garbage collection included) and allocs/op count the work
// done and do not depend on other processes' load.

var scaleSizes = []int{10, 2000}

// scaleFleet is n active devices in one metro, each with VLANs 1000 and 1001
// on bond0 (hybrid-bonded), as a large pool leaves the simulator; a
// subscriber is connected, as the standalone server's progress log and the
// join agent always are, so notifications are built as they are there.
type scaleFleet struct {
	b     *testing.B
	sim   *Simulator
	clock *FakeClock
	h     http.Handler
	ids   []string
	bond0 []string
	vlans []string
	eip   string // an elastic address of the fleet's metro
}

func newScaleFleet(b *testing.B, n int) *scaleFleet {
	return newFleetWith(b, n, DefaultTimings())
}

// newFleetWith builds the fleet with the given device timings.
func newFleetWith(b *testing.B, n int, t Timings) *scaleFleet {
	b.Helper()
	clock := NewFakeClock(testStart)
	sim := New(Options{Clock: clock, Timings: t, Seed: 42})
	sim.AddProject(testToken, testProject)
	sim.Subscribe(func(Notification) {})
	f := &scaleFleet{b: b, sim: sim, clock: clock, h: sim.Handler()}
	for _, vx := range []int32{1000, 1001} {
		var v metalv1.VirtualNetwork
		f.call(http.MethodPost, "/projects/"+testProject+"/virtual-networks", metalv1.VirtualNetworkCreateInput{Metro: ptr("da"), Vxlan: ptr(vx)}, 201, &v)
		f.vlans = append(f.vlans, v.GetId())
	}
	for i := 0; i < n; i++ {
		f.ids = append(f.ids, f.create(fmt.Sprintf("fleet-%04d", i)))
	}
	clock.Advance(t.Queue + t.IPXEBoot)
	for _, id := range f.ids {
		var d metalv1.Device
		f.call(http.MethodGet, "/devices/"+id, nil, 200, &d)
		bond0 := portNamed(d, "bond0")
		f.bond0 = append(f.bond0, bond0)
		for _, v := range f.vlans {
			f.call(http.MethodPost, "/ports/"+bond0+"/assign", metalv1.PortAssignInput{Vnid: ptr(v)}, 200, nil)
		}
	}
	var res metalv1.RequestIPReservation201Response
	f.call(http.MethodPost, "/projects/"+testProject+"/ips", metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("da")}, 201, &res)
	f.eip = res.IPReservation.GetAddress()
	return f
}

func portNamed(d metalv1.Device, name string) string {
	for _, p := range d.NetworkPorts {
		if p.GetName() == name {
			return p.GetId()
		}
	}
	return ""
}

func (f *scaleFleet) create(hostname string) string {
	in := ipxeInput(hostname)
	var d metalv1.Device
	f.call(http.MethodPost, "/projects/"+testProject+"/devices", in, 201, &d)
	return d.GetId()
}

// call serves one API request in-process and checks its status.
func (f *scaleFleet) call(method, path string, body any, want int, out any) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(f.b, err)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequest(method, apiPrefix+path, rd)
	req.Header.Set("X-Auth-Token", testToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != want {
		f.b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	if out != nil {
		require.NoError(f.b, json.Unmarshal(rec.Body.Bytes(), out))
	}
}

// pkg/metal's device read.
const deviceQuery = "?include=plan,metro,operating_system,hardware_reservation&exclude=userdata,root_password"

func BenchmarkScale(b *testing.B) {
	for _, n := range scaleSizes {
		// Built on first use, so a -bench filter naming one size builds
		// only that fleet.
		var f *scaleFleet
		run := func(name string, fn func(i int)) {
			b.Run(fmt.Sprintf("%s/devices=%d", name, n), func(b *testing.B) {
				if f == nil {
					f = newScaleFleet(b, n)
				}
				f.b = b
				b.ReportAllocs()
				b.ResetTimer()
				cpu := processCPU()
				for i := 0; b.Loop(); i++ {
					fn(i)
				}
				b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
		pick := func(i int) int { return (i * 7919) % n }

		run("CreateDevice", func(i int) {
			id := f.create(fmt.Sprintf("extra-%d", i))
			f.b.StopTimer()
			require.NoError(f.b, f.sim.DeleteDeviceOutOfBand(id))
			f.b.StartTimer()
		})
		run("GetDevice", func(i int) {
			f.call(http.MethodGet, "/devices/"+f.ids[pick(i)]+deviceQuery, nil, 200, nil)
		})
		run("ListDevicesByTag", func(i int) {
			f.call(http.MethodGet, fmt.Sprintf("/projects/%s/devices%s&per_page=100&tag=pool:fleet-%04d", testProject, deviceQuery, pick(i)), nil, 200, nil)
		})
		run("ListDevicesBriefPage", func(int) {
			f.call(http.MethodGet, "/projects/"+testProject+"/devices?exclude=userdata,root_password,network_ports,ip_addresses,plan,metro,facility,operating_system&per_page=10", nil, 200, nil)
		})
		run("UpdateDevice", func(i int) {
			f.call(http.MethodPut, "/devices/"+f.ids[pick(i)]+deviceQuery,
				metalv1.DeviceUpdateInput{Description: ptr(fmt.Sprintf("update %d", i))}, 200, nil)
		})
		run("Reboot", func(i int) {
			f.call(http.MethodPost, "/devices/"+f.ids[pick(i)]+"/actions",
				metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_REBOOT}, 202, nil)
		})
		run("GetPort", func(i int) {
			f.call(http.MethodGet, "/ports/"+f.bond0[pick(i)], nil, 200, nil)
		})
		run("AssignUnassignVLAN", func(i int) {
			port := f.bond0[pick(i)]
			f.call(http.MethodPost, "/ports/"+port+"/unassign", metalv1.PortAssignInput{Vnid: ptr(f.vlans[1])}, 200, nil)
			f.call(http.MethodPost, "/ports/"+port+"/assign", metalv1.PortAssignInput{Vnid: ptr(f.vlans[1])}, 200, nil)
		})
		run("CreateDeleteVLAN", func(int) {
			var v metalv1.VirtualNetwork
			f.call(http.MethodPost, "/projects/"+testProject+"/virtual-networks", metalv1.VirtualNetworkCreateInput{Metro: ptr("da")}, 201, &v)
			f.call(http.MethodDelete, "/virtual-networks/"+v.GetId(), nil, 204, nil)
		})
		run("AssignUnassignIP", func(i int) {
			var a metalv1.IPAssignment
			f.call(http.MethodPost, "/devices/"+f.ids[pick(i)]+"/ips", metalv1.IPAssignmentInput{Address: f.eip + "/32"}, 201, &a)
			f.call(http.MethodDelete, "/ips/"+a.GetId(), nil, 204, nil)
		})
		run("Tick", func(int) { f.sim.Tick() })
		// A VLAN lists every device on it (instances), so these answers grow
		// with the number of devices sharing the VLAN, as the API's did.
		run("ListVLANsShared", func(int) {
			f.call(http.MethodGet, "/projects/"+testProject+"/virtual-networks?metro=da", nil, 200, nil)
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
