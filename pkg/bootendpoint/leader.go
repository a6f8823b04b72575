package bootendpoint

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// A standby replica forwards the boot requests it receives to the leader,
// and the only thing every replica already reads about the leader is the
// holder identity in the leader Lease. So the identity carries the
// address the leader's boot endpoint is reachable at:
//
//	<hostname>_<pid>@<ip>:<port>
//
// A hostname holds no '@', so the last one starts the address.

// LeaderIdentity is a replica's identity in the leader Lease: its name
// and process ID, and the boot endpoint's address when it has one.
func LeaderIdentity(hostname string, pid int, address string) string {
	id := hostname + "_" + strconv.Itoa(pid)
	if address == "" {
		return id
	}
	return id + "@" + address
}

// LeaderAddress is the boot endpoint's address in a holder identity: an IP
// and a port, nothing a request could be steered elsewhere with.
func LeaderAddress(identity string) (string, error) {
	i := strings.LastIndexByte(identity, '@')
	if i < 0 {
		return "", fmt.Errorf("leader identity %q names no boot endpoint address", identity)
	}
	addr := identity[i+1:]
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("leader identity %q: %w", identity, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		return "", fmt.Errorf("leader identity %q: %q is not an IP a replica can reach", identity, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("leader identity %q: bad port %q", identity, port)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// AdvertisedAddress is where other replicas reach this one's boot
// endpoint: the pod's IP (podIP) or else the listener's own IP, with the
// listener's port. It is empty when neither names an IP (a listener on
// every interface, outside a pod): other replicas then answer 503.
func AdvertisedAddress(podIP string, listener net.Addr) string {
	tcp, ok := listener.(*net.TCPAddr)
	if !ok {
		return ""
	}
	ip := net.ParseIP(strings.TrimSpace(podIP))
	if ip == nil {
		ip = tcp.IP
	}
	if ip == nil || ip.IsUnspecified() {
		return ""
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}
