package bmc

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// udpRelay forwards datagrams between IPMI clients and a BMC, holding each
// answer back for a settable delay: a slow BMC, or a slow network, for a
// protocol that has no HTTP layer to slow down.
type udpRelay struct {
	ln       *net.UDPConn
	upstream *net.UDPAddr
	delay    atomic.Int64
	mu       sync.Mutex
	conns    map[string]*net.UDPConn
}

func newUDPRelay(t *testing.T, upstream string) *udpRelay {
	t.Helper()
	up, err := net.ResolveUDPAddr("udp", upstream)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &udpRelay{ln: ln, upstream: up, conns: map[string]*net.UDPConn{}}
	go r.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.conns {
			_ = c.Close()
		}
	})
	return r
}

func (r *udpRelay) port() int { return r.ln.LocalAddr().(*net.UDPAddr).Port }

func (r *udpRelay) setDelay(d time.Duration) { r.delay.Store(int64(d)) }

func (r *udpRelay) serve() {
	buf := make([]byte, 65535)
	for {
		n, client, err := r.ln.ReadFromUDP(buf)
		if err != nil {
			return
		}
		up, err := r.conn(client)
		if err != nil {
			return
		}
		_, _ = up.Write(buf[:n])
	}
}

// conn returns the upstream socket of one client, so each client keeps its
// own source port towards the BMC, as it would without the relay.
func (r *udpRelay) conn(client *net.UDPAddr) (*net.UDPConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.conns[client.String()]; ok {
		return c, nil
	}
	c, err := net.DialUDP("udp", nil, r.upstream)
	if err != nil {
		return nil, err
	}
	r.conns[client.String()] = c
	go func() {
		buf := make([]byte, 65535)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			msg := append([]byte(nil), buf[:n]...)
			time.AfterFunc(time.Duration(r.delay.Load()), func() { _, _ = r.ln.WriteToUDP(msg, client) })
		}
	}()
	return c, nil
}
