package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func waitHTTP(ctx context.Context, p *process, client *http.Client, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return errors.New("process exited")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s answered %s", url, resp.Status)
		} else {
			last = err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("not ready after %s: %w", timeout, last)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts2() (int, int, error) {
	a, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	for i := 0; i < 10; i++ {
		b, err := freePort()
		if err != nil {
			return 0, 0, err
		}
		if b != a {
			return a, b, nil
		}
	}
	return 0, 0, errors.New("no second free port")
}

// retryPorts retries fn, which picks free ports, since another process may take a
// port between choosing and binding it.
func retryPorts(n int, fn func() error) error {
	var err error
	for i := 0; i < n; i++ {
		if err = fn(); err == nil {
			return nil
		}
	}
	return err
}

// lowestPickedPort is where FreeAddr's ports start: above the ports
// services are usually configured on.
const lowestPickedPort = 10000

// FreeAddr is a loopback address nothing listens on, for a server that
// must be named before it starts (a binary's --http-address, a boot
// endpoint the simulated servers are told of). A port the kernel hands out for
// port 0 is free again once the picking listener closes, and any listener
// on port 0 or outgoing connection, of this process or another, may take
// it before the server binds it. So the port is drawn below the kernel's
// ephemeral range, which neither of those uses: only another explicit
// pick of the same port could take it. Where that range leaves no room,
// it falls back to the kernel's pick.
func FreeAddr() (string, error) {
	if top := ephemeralStart(); top > lowestPickedPort {
		for range 50 {
			port := lowestPickedPort + rand.IntN(top-lowestPickedPort)
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				addr := l.Addr().String()
				return addr, l.Close()
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
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
