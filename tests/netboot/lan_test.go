package netboot

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// seq numbers this test binary's namespaces and links.
var seq atomic.Int32

// lan is a management network in a namespace of its own: a bridge named as
// the page's interface, holding the page's endpoint address, which the
// DHCP server, the endpoint and the machines' taps share.
type lan struct {
	ns string
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// newNamespace makes a network namespace named after this process and
// deletes it, with every link in it, when the test ends.
func newNamespace(t *testing.T, role string) string {
	t.Helper()
	name := fmt.Sprintf("hea-nb-%d-%d-%s", os.Getpid(), seq.Add(1), role)
	ip(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ip(t, "-n", name, "link", "set", "lo", "up")
	return name
}

func newLAN(t *testing.T) *lan {
	t.Helper()
	l := &lan{ns: newNamespace(t, "lan")}
	ip(t, "-n", l.ns, "link", "add", pageInterface, "type", "bridge")
	ip(t, "-n", l.ns, "addr", "add", pageEndpoint+"/24", "dev", pageInterface)
	ip(t, "-n", l.ns, "link", "set", pageInterface, "up")
	return l
}

// tap adds a tap for a machine to the bridge and returns its name.
func (l *lan) tap(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("nbtap%d", seq.Add(1))
	ip(t, "-n", l.ns, "tuntap", "add", "dev", name, "mode", "tap")
	ip(t, "-n", l.ns, "link", "set", name, "master", pageInterface)
	ip(t, "-n", l.ns, "link", "set", name, "up")
	return name
}

// site is another host of the management network, in a namespace of its
// own linked to the bridge: the DHCP server a proxy DHCP runs beside. Its
// interface is eth0, with address addr.
func (l *lan) site(t *testing.T, addr string) string {
	t.Helper()
	ns := newNamespace(t, "site")
	port := fmt.Sprintf("nbveth%d", seq.Add(1))
	ip(t, "-n", l.ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
	ip(t, "-n", l.ns, "link", "set", port, "master", pageInterface)
	ip(t, "-n", l.ns, "link", "set", port, "up")
	ip(t, "-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	ip(t, "-n", ns, "link", "set", "eth0", "up")
	return ns
}

// listen opens a TCP listener inside the namespace. A socket belongs to the
// namespace of the thread that made it: a locked thread enters ns, makes
// it and goes back; Accept then runs on any thread.
func (l *lan) listen(addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		ln, back, err := listenIn(l.ns, addr)
		if back {
			runtime.UnlockOSThread()
		}
		// A thread that could not go back stays locked: the runtime ends it
		// with this goroutine instead of reusing it in the wrong namespace.
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}

// listenIn listens in ns from the calling (locked) thread and reports
// whether the thread is back in its own namespace.
func listenIn(ns, addr string) (net.Listener, bool, error) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, err
	}
	defer self.Close()
	target, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		return nil, true, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("entering network namespace %s: %w", ns, err)
	}
	ln, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return nil, false, errors.New("could not return a thread to its network namespace")
	}
	return ln, true, lerr
}
