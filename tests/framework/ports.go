package framework

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// FreeAddr is a loopback address nothing listens on, for a server a test
// must name before it starts (the binary's --http-address, a boot endpoint
// the simulated servers are told of): cluster.FreeAddr, which says how it
// keeps other processes from taking the port meanwhile.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := cluster.FreeAddr()
	require.NoError(t, err)
	return addr
}

// BMCAddress is a loopback address of the test's own (127.x.y.z, not
// 127.0.0.1) where a BMC's standard ports are free: Redfish's 443 (TCP)
// and IPMI's 623 (UDP), which the Harvester UI's default port relies on.
// Binding them takes root or CAP_NET_BIND_SERVICE: without either the test
// is skipped, and fails under CI=true.
func BMCAddress(t testing.TB) string {
	t.Helper()
	for range 50 {
		host := net.IPv4(127, byte(1+rand.IntN(250)), byte(rand.IntN(256)), byte(1+rand.IntN(254))).String()
		tcp, err := net.Listen("tcp", net.JoinHostPort(host, "443"))
		if err != nil {
			if errors.Is(err, syscall.EACCES) {
				if os.Getenv("CI") == "true" {
					t.Fatalf("binding port 443 needs root or CAP_NET_BIND_SERVICE: %v", err)
				}
				t.Skipf("binding port 443 needs root or CAP_NET_BIND_SERVICE: %v", err)
			}
			continue
		}
		udp, err := net.ListenPacket("udp", net.JoinHostPort(host, "623"))
		_ = tcp.Close()
		if err != nil {
			continue
		}
		_ = udp.Close()
		return host
	}
	t.Fatalf("no loopback address with ports 443 and 623 free")
	return ""
}
