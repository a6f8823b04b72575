package ipmisim

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// Require starts an ipmi_sim for the test and stops it when the test ends.
// Without ipmi_sim the test fails under CI=true (CI must never skip the
// real-BMC tests silently) and is skipped otherwise.
func Require(t testing.TB, opts Options) *Sim {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := Start(opts)
	if errors.Is(err, ErrNotInstalled) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatalf("start ipmi_sim: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop ipmi_sim: %v", err)
		}
	})
	return s
}

// RequireRelay puts a Relay in front of sim for the test.
func RequireRelay(t testing.TB, sim *Sim) *Relay {
	t.Helper()
	r, err := NewRelay(fmt.Sprintf("%s:%d", sim.Host, sim.Port))
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}
