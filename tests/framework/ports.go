package framework

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
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
