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

// md5Failures reads the kernel's count of segments dropped for a wrong TCP
// MD5 signature, the proof that a wrong password reached a router and was
// refused.
func md5Failures(t *testing.T) int {
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
			if k == "TCPMD5Failure" && i < len(fields) {
				n, err := strconv.Atoi(fields[i])
				if err == nil {
					return n
				}
			}
		}
	}
	t.Skip("the kernel does not count TCP MD5 failures")
	return 0
}
