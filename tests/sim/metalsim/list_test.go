package metalsim

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListDevicesPaginatesOverMoreThan100Devices(t *testing.T) {
	e := newEnv(t, withTimings(Timings{}))
	for i := range 150 {
		in := ipxeInput(fmt.Sprintf("node-%03d", i))
		if i%2 == 0 {
			in.Tags = append(in.Tags, "even")
		}
		e.create(in)
	}

	all, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).PerPage(100).ExecuteWithPagination()
	require.NoError(t, err)
	require.Len(t, all.Devices, 150)
	seen := map[string]bool{}
	for i, d := range all.Devices {
		assert.Equal(t, fmt.Sprintf("node-%03d", i), d.GetHostname(), "creation order is stable across pages")
		seen[d.GetId()] = true
	}
	assert.Len(t, seen, 150)

	even, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Tag("even").PerPage(100).ExecuteWithPagination()
	require.NoError(t, err)
	assert.Len(t, even.Devices, 75)

	t.Run("default page size and meta", func(t *testing.T) {
		page, resp, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Tag("even").Page(2).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Len(t, page.Devices, 10)
		m := page.Meta
		assert.Equal(t, int32(2), m.GetCurrentPage())
		assert.Equal(t, int32(8), m.GetLastPage())
		assert.Equal(t, int32(75), m.GetTotal())
		assert.Contains(t, m.First.Href, "page=1")
		assert.Contains(t, m.Last.Href, "page=8")
		assert.Contains(t, m.Next.Href, "page=3")
		assert.Contains(t, m.Previous.Href, "page=1")
		assert.Contains(t, m.Self.Href, "page=2")
		assert.Contains(t, m.Self.Href, "tag=even")
		assert.True(t, strings.HasPrefix(m.Self.Href, "/metal/v1/projects/"+testProject+"/devices?"))
	})
	t.Run("last page has no next", func(t *testing.T) {
		page, _, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).PerPage(100).Page(2).Execute()
		require.NoError(t, err)
		assert.Len(t, page.Devices, 50)
		assert.Nil(t, page.Meta.Next)
	})
	t.Run("per_page out of range is clamped", func(t *testing.T) {
		page, _, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).PerPage(0).Execute()
		require.NoError(t, err)
		assert.Len(t, page.Devices, 10)
		page, _, err = e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).PerPage(5000).Execute()
		require.NoError(t, err)
		assert.Len(t, page.Devices, 150)
		assert.Contains(t, page.Meta.Self.Href, "per_page=1000")
	})
}

func TestListDevicesOfEmptyProject(t *testing.T) {
	e := newEnv(t)
	page, _, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.Empty(t, page.Devices)
	assert.Equal(t, int32(1), page.Meta.GetCurrentPage())
	assert.Equal(t, int32(1), page.Meta.GetLastPage())
	all, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).ExecuteWithPagination()
	require.NoError(t, err)
	assert.Empty(t, all.Devices)
}

func TestListDevicesFilters(t *testing.T) {
	e := newEnv(t)
	a := e.createActive("alpha-1")
	b := e.createActive("beta-1", func(in *metalv1.DeviceCreateInMetroInput) {
		in.Metro = "am"
		in.Tags = []string{"other"}
		in.Description = ptr("storage box")
	})
	mac := e.port(b, "eth1").Data.GetMac()
	ip := b.IpAddresses[0].GetAddress()

	tests := []struct {
		name string
		req  func(metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest
		want []string
	}{
		{"tag", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest {
			return r.Tag("other")
		}, []string{b.GetId()}},
		{"partial hostname", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest {
			return r.Hostname("pha")
		}, []string{a.GetId()}},
		{"mac address", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest {
			return r.MacAddress(strings.ToUpper(mac))
		}, []string{b.GetId()}},
		{"metro", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest {
			return r.Metro("da")
		}, []string{a.GetId()}},
		{"search description", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest {
			return r.Search("storage")
		}, []string{b.GetId()}},
		{"search ip", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest { return r.Search(ip) }, []string{b.GetId()}},
		{"type", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest {
			return r.Type_("ondemand")
		}, []string{a.GetId(), b.GetId()}},
		{"no match", func(r metalv1.ApiFindProjectDevicesRequest) metalv1.ApiFindProjectDevicesRequest {
			return r.Tag("nope")
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := tt.req(e.client.DevicesApi.FindProjectDevices(e.ctx, testProject)).ExecuteWithPagination()
			require.NoError(t, err)
			var got []string
			for _, d := range list.Devices {
				got = append(got, d.GetId())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPlansAndMetros(t *testing.T) {
	e := newEnv(t)
	plans, resp, err := e.client.PlansApi.FindPlans(e.ctx).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	nics := map[string]int32{}
	for _, p := range plans.Plans {
		nics[p.GetSlug()] = p.Specs.Nics[0].GetCount()
		assert.NotEmpty(t, p.Specs.Cpus)
		assert.NotEmpty(t, p.Specs.Memory.GetTotal())
		assert.NotEmpty(t, p.Specs.Drives)
		assert.NotEmpty(t, p.AvailableInMetros)
	}
	assert.Equal(t, int32(2), nics["c3.small.x86"])
	assert.Equal(t, int32(2), nics["m3.large.x86"])
	assert.Equal(t, int32(4), nics["n3.xlarge.x86"])
	assert.Equal(t, int32(2), nics["s3.xlarge.x86"])

	one, _, err := e.client.PlansApi.FindPlans(e.ctx).Slug("n3.xlarge.x86").Execute()
	require.NoError(t, err)
	require.Len(t, one.Plans, 1)
}
