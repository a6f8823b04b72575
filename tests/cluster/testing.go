package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// Shared holds the one cluster of a test binary, started by RunMain.
type Shared struct {
	*Cluster
	err error
}

// RunMain starts one cluster for the whole test binary, runs the tests and stops
// it. Starting takes a few seconds; each test isolates itself by naming its own
// objects. Without binaries the tests run anyway and Require decides per test.
func RunMain(m *testing.M, opts Options, shared *Shared) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := Start(ctx, opts)
	cancel()
	shared.Cluster, shared.err = c, err
	if err != nil {
		fmt.Fprintf(os.Stderr, "test cluster not started: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "test cluster: kube-apiserver %s at %s (files in %s)\n", KubeVersion, c.APIServerURL(), c.Dir())
	}
	code := m.Run()
	if c != nil {
		c.Stop()
	}
	return code
}

// Require returns the shared cluster, or ends the test: a failure under CI=true
// (integration tests must never be silently skipped there), a skip otherwise.
func (s *Shared) Require(t testing.TB) *Cluster {
	t.Helper()
	if s.Cluster != nil {
		return s.Cluster
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("integration test needs the test cluster, which did not start: %v", s.err)
	}
	t.Skipf("no test cluster (%v); `make test` builds and starts one", s.err)
	return nil
}
