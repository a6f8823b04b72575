package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
