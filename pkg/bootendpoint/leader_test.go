package bootendpoint

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLeaderIdentityCarriesTheBootEndpointAddress(t *testing.T) {
	for _, addr := range []string{"10.52.0.17:8081", "[fd00:10:52::17]:8081"} {
		id := LeaderIdentity("harvester-seeder-addon-7d9f8-x2x4q", 7, addr)
		got, err := LeaderAddress(id)
		require.NoError(t, err, id)
		assert.Equal(t, addr, got)
	}
	assert.Equal(t, "host_7", LeaderIdentity("host", 7, ""), "no address: the identity of old")
}

func TestLeaderAddressRefusesWhatIsNoReachableAddress(t *testing.T) {
	for _, id := range []string{
		"host_7",                   // an identity of a release before this one
		"",                         // no holder
		"host_7@",                  // no address
		"host_7@10.52.0.17",        // no port
		"host_7@ipxe.example:8081", // a name, not an IP
		"host_7@0.0.0.0:8081",      // every interface
		"host_7@10.52.0.17:0",      // no port
		"host_7@10.52.0.17:99999",  // out of range
		"host_7@10.52.0.17:8081/x", // a path
		"host_7@10.52.0.17:http",   // a service name
	} {
		_, err := LeaderAddress(id)
		assert.Error(t, err, "%q", id)
	}
}

func TestAdvertisedAddress(t *testing.T) {
	listener := &net.TCPAddr{IP: net.IPv6unspecified, Port: 8081}
	assert.Equal(t, "10.52.0.17:8081", AdvertisedAddress("10.52.0.17", listener), "the pod IP, the listener's port")
	assert.Equal(t, "127.0.0.1:40123", AdvertisedAddress("", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40123}), "outside a pod, the listener's IP")
	assert.Empty(t, AdvertisedAddress("", listener), "every interface names nothing to reach")
	assert.Empty(t, AdvertisedAddress("not-an-ip", listener))
}

func TestLeaderOfALease(t *testing.T) {
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	self := LeaderIdentity("b", 2, "10.52.0.18:8081")
	lease := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		seconds, renew := int32(30), metav1.NewMicroTime(now.Add(-renewed))
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &renew}}
	}
	addr, why := Leader(lease(LeaderIdentity("a", 1, "10.52.0.17:8081"), 5*time.Second), self, "10.52.0.18:8081", now)
	assert.Equal(t, "10.52.0.17:8081", addr)
	assert.Empty(t, why)

	for name, l := range map[string]*coordinationv1.Lease{
		"no holder":              lease("", time.Second),
		"released":               {},
		"ran out":                lease(LeaderIdentity("a", 1, "10.52.0.17:8081"), 31*time.Second),
		"this replica":           lease(self, time.Second),
		"this replica's address": lease(LeaderIdentity("b", 3, "10.52.0.18:8081"), time.Second),
		"no address":             lease("a_1", time.Second),
	} {
		addr, why := Leader(l, self, "10.52.0.18:8081", now)
		assert.Empty(t, addr, name)
		assert.NotEmpty(t, why, name)
	}
}
