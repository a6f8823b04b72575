// Go listens with MPTCP by default since 1.24, and MPTCP sockets refuse
// TCP MD5 keys; the routers need plain TCP to check BGP passwords.

//go:debug multipathtcp=0

package tor_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// md5Drops reads a kernel counter of segments dropped by TCP MD5 checks,
// the proof that a connection attempt reached a router and was refused:
// TCPMD5Failure for a wrong signature, TCPMD5NotFound for a missing one.
func md5Drops(t *testing.T, counter string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		t.Skipf("no /proc/net/netstat: %v", err)
	}
	var keys []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "TcpExt:" {
			continue
		}
		if keys == nil {
			keys = fields
			continue
		}
		for i, k := range keys {
			if k == counter && i < len(fields) {
				n, err := strconv.Atoi(fields[i])
				if err == nil {
					return n
				}
			}
		}
	}
	t.Skipf("the kernel does not count %s", counter)
	return 0
}
