package kubevip

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// nsSeq numbers this test binary's namespaces and links.
var nsSeq atomic.Int32

// ip runs ip(8) and fails the test on error.
func ip(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// newNetns creates a named network namespace (so that `ip netns exec` can
// enter it) and deletes it when the test ends, with every link in it and
// the host end of every veth pair into it. Cleanups run in reverse, so the
// processes started in it afterwards are stopped before it goes.
func newNetns(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("hea-kv-%d-%d", os.Getpid(), nsSeq.Add(1))
	ip(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ip(t, "-n", name, "link", "set", "lo", "up")
	return name
}

// mgmtBridge gives ns the management network of a Harvester node: bridge
// mgmt-br with the node's address and the default route, so that kube-vip's
// empty vip_interface picks it as Harvester's does. A bridge has carrier
// only with a port that is up: a veth pair whose both ends stay in ns (this
// kernel has no dummy links).
func mgmtBridge(t testing.TB, ns, nodeCIDR, gateway string) {
	t.Helper()
	ip(t, "-n", ns, "link", "add", "mgmt-br", "type", "bridge")
	ip(t, "-n", ns, "link", "add", "mgmt-bo", "type", "veth", "peer", "name", "uplink0")
	ip(t, "-n", ns, "link", "set", "mgmt-bo", "master", "mgmt-br")
	for _, l := range []string{"uplink0", "mgmt-bo", "mgmt-br"} {
		ip(t, "-n", ns, "link", "set", l, "up")
	}
	ip(t, "-n", ns, "addr", "add", nodeCIDR, "dev", "mgmt-br")
	ip(t, "-n", ns, "route", "add", "default", "via", gateway, "dev", "mgmt-br")
}

// vethToHost links ns to this namespace with a veth pair and returns the
// names of the host end and of the end in ns, both up.
func vethToHost(t testing.TB, ns string) (hostEnd, nsEnd string) {
	t.Helper()
	n := nsSeq.Load()
	hostEnd, nsEnd = fmt.Sprintf("hkv%d-%d-h", os.Getpid()%10000, n), fmt.Sprintf("hkv%d-n", n)
	ip(t, "link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd, "netns", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostEnd).Run() })
	ip(t, "link", "set", hostEnd, "up")
	ip(t, "-n", ns, "link", "set", nsEnd, "up")
	return hostEnd, nsEnd
}

// hasAddr tells whether dev in ns carries addr.
func hasAddr(ns, dev, addr string) bool {
	out, err := exec.Command("ip", "-n", ns, "-4", "-o", "addr", "show", "dev", dev).Output()
	return err == nil && strings.Contains(string(out), " "+addr+"/")
}

// forwardIntoNetns makes target, an address of this namespace such as the
// test apiserver on 127.0.0.1, answer at addr inside ns until the test
// ends. Loopback is not routed between namespaces, and the apiserver's
// certificate names 127.0.0.1, so kube-vip inside ns dials 127.0.0.1 too.
func forwardIntoNetns(t testing.TB, ns, addr, target string) {
	t.Helper()
	l, err := listenInNetns(ns, addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go splice(c, target)
		}
	}()
}

func splice(c net.Conn, target string) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	go func() {
		_, _ = io.Copy(u, c)
		_ = u.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(c, u)
}

// listenInNetns opens a TCP listener inside ns. A socket belongs to the
// namespace it was made in: it is made on a locked thread that joined ns,
// and the thread goes back before it is unlocked. Accept, and the dials of
// forwardIntoNetns, then run on any thread, in this namespace.
func listenInNetns(ns, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		l, err := listenFromThread(ns, addr)
		if err == errThreadLost {
			// Left locked: the runtime ends the thread with the goroutine
			// rather than reuse it in the wrong namespace.
			ch <- result{err: err}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

var errThreadLost = fmt.Errorf("could not return a thread to its network namespace")

func listenFromThread(ns, addr string) (net.Listener, error) {
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, err
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("entering network namespace %s: %w", ns, err)
	}
	l, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		if l != nil {
			_ = l.Close()
		}
		return nil, errThreadLost
	}
	return l, lerr
}
