package framework

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// lowestPickedPort is where FreeAddr's ports start: above the ports
// services are usually configured on.
const lowestPickedPort = 10000

// FreeAddr is a loopback address nothing listens on, for a server a test
// must name before it starts (the binary's --http-address, a boot endpoint
// the simulated servers are told of). A port the kernel hands out for
// port 0 is free again once the picking listener closes, and any listener
// on port 0 or outgoing connection, of this process or another, may take
// it before the server binds it. So the port is drawn below the kernel's
// ephemeral range, which neither of those uses: only another explicit
// pick of the same port could take it. Where that range leaves no room,
// it falls back to the kernel's pick.
func FreeAddr(t testing.TB) string {
	t.Helper()
	if top := ephemeralStart(); top > lowestPickedPort {
		for range 50 {
			port := lowestPickedPort + rand.IntN(top-lowestPickedPort)
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				addr := l.Addr().String()
				require.NoError(t, l.Close())
				return addr
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// ephemeralStart is the first port of the kernel's ephemeral range, or 0
// when it cannot be read (not Linux).
func ephemeralStart() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return 0
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return n
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
