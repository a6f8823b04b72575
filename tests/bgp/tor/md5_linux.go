//go:build linux

package tor

import (
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// md5Listening reports whether a listener opened the way GoBGP opens its
// own accepts a TCP MD5 key. Since Go 1.24 listeners are MPTCP sockets by
// default, which refuse TCP_MD5SIG (ENOPROTOOPT); a program embedding the
// routers needs GODEBUG multipathtcp=0 (or a //go:debug line) for MD5.
func md5Listening(ip netip.Addr) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return false
	}
	defer l.Close()
	sc, err := l.(*net.TCPListener).SyscallConn()
	if err != nil {
		return false
	}
	sig := unix.TCPMD5Sig{Keylen: 5}
	sig.Addr.Family = unix.AF_INET
	copy(sig.Addr.Data[2:], net.IPv4(127, 0, 0, 1).To4())
	copy(sig.Key[:], "probe")
	var serr error
	if err := sc.Control(func(fd uintptr) {
		serr = unix.SetsockoptTCPMD5Sig(int(fd), unix.IPPROTO_TCP, unix.TCP_MD5SIG, &sig)
	}); err != nil {
		return false
	}
	return serr == nil
}
