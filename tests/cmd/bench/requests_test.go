package main

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

func listByTag(tag string) metalsim.Request {
	return metalsim.Request{
		Method: "GET", Path: "/metal/v1/projects/p/devices", Operation: metalsim.OpFindProjectDevices, Status: 200,
		Query: url.Values{"tag": {tag}, "page": {"1"}, "per_page": {"100"}}.Encode(),
	}
}

func TestClassifyRequests(t *testing.T) {
	sweep := listByTag(equinixv1.ClusterTag(clusterID))
	adopt := listByTag(equinixv1.InstanceTag("6f1c"))
	vlans := metalsim.Request{Path: "/metal/v1/projects/p/virtual-networks", Operation: metalsim.OpFindVirtualNetworks, Status: 200}
	get := metalsim.Request{Path: "/metal/v1/devices/d", Operation: metalsim.OpFindDeviceByID, Status: 200}
	create := metalsim.Request{Path: "/metal/v1/projects/p/devices", Operation: metalsim.OpCreateDevice, Status: 201}
	refused := metalsim.Request{Path: "/metal/v1/projects/p/devices", Operation: metalsim.OpCreateDevice, Status: 429}
	metadata := metalsim.Request{Path: "/metadata", Operation: metalsim.OpMetadata, Status: 200}

	cases := []struct {
		name                string
		req                 metalsim.Request
		sweepList, periodic bool
	}{
		{"the sweep's list", sweep, true, true},
		{"an adoption list", adopt, false, false},
		{"the VLAN list", vlans, false, true},
		{"a device read", get, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.sweepList, isSweepList(tc.req))
			assert.Equal(t, tc.periodic, isPeriodicList(tc.req))
		})
	}

	log := []metalsim.Request{sweep, adopt, get, create, refused, metadata, get}
	api := apiCalls(log)
	assert.Len(t, api, 6, "the metadata service is not the controller's cost")
	assert.Equal(t, 1, successfulCreates(api))
	assert.Equal(t, 1, throttledCount(api))
	counts := countOps(api, nil)
	assert.Equal(t, 6, counts.total())
	assert.Equal(t, []string{metalsim.OpCreateDevice, metalsim.OpFindDeviceByID, metalsim.OpFindProjectDevices}, counts.ops())
	assert.Equal(t, "createDevice 1.00, findDeviceById 1.00, findProjectDevices 1.00", counts.perMinute(2))
	assert.Equal(t, "none", opCounts{}.perMinute(1))
	assert.Equal(t, opCounts{metalsim.OpFindProjectDevices: 1}, countOps(api, isPeriodicList))
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute: "10m", time.Minute: "1m", 24 * time.Hour: "24h", 30 * time.Second: "30s", 1500 * time.Millisecond: "1.5s",
	} {
		assert.Equal(t, want, shortDuration(d))
	}
}

func TestMarkdownCells(t *testing.T) {
	assert.Equal(t, `a \| b c`, cell("a | b\nc"))
	assert.Equal(t, "—", cell(""))
	r := &report{machine: machine{cpus: 2, goVersion: "go1.26"}, started: time.Unix(0, 0)}
	r.add(result{title: "1. API frugality", rows: []row{{figure: "f", result: "r", target: "t", verdict: verdictPass}}, details: []string{"detail"}})
	md := r.markdown()
	assert.Contains(t, md, "| Figure | Result | Target | Verdict |")
	assert.Contains(t, md, "| f | r | t | "+verdictPass+" |")
	assert.Contains(t, md, "### 1. API frugality")
	assert.Contains(t, md, "detail")
}
