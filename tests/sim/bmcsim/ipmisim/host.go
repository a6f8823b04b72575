package ipmisim

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// smbiosGUID renders a UUID as lan.conf's guid: 16 bytes in SMBIOS order,
// the first three fields little endian, as a BMC copies them from the
// host's SMBIOS table.
func smbiosGUID(s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", fmt.Errorf("ipmisim: UUID %q: %w", s, err)
	}
	b := u[:]
	le := []byte{b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6]}
	return hex.EncodeToString(append(le, b[8:]...)), nil
}

// writeHost writes the two scripts the chassis control starts on power
// on, one per kind of boot, each exec'ing the host's program: its pid is
// then the program's own.
func writeHost(opts Options) error {
	if opts.Host == nil {
		return nil
	}
	for name, network := range map[string]bool{"host-network.sh": true, "host-default.sh": false} {
		argv := opts.Host(network)
		if len(argv) == 0 {
			return fmt.Errorf("ipmisim: Host(%t) gave no command", network)
		}
		quoted := make([]string, 0, len(argv))
		for _, a := range argv {
			quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		script := "#!/bin/sh\nexec " + strings.Join(quoted, " ") + "\n"
		if err := os.WriteFile(filepath.Join(opts.Dir, name), []byte(script), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if opts.UEFIOnly {
		if err := os.WriteFile(filepath.Join(opts.Dir, "host-uefi-only"), nil, 0o600); err != nil {
			return fmt.Errorf("write host-uefi-only: %w", err)
		}
	}
	return nil
}

// hostPID is the running host program's pid, or 0.
func (s *Sim) hostPID() int {
	b, err := os.ReadFile(filepath.Join(s.dir, "state", "host.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !alive(pid) {
		return 0
	}
	return pid
}

func (s *Sim) hostRunning() bool { return s.hostPID() != 0 }

// alive says whether the process exists and is no zombie: a host whose
// parent script has exited is reaped by init, maybe late.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// HostPID returns the pid of the host's program while it runs (0 when it
// does not, or the host is a power switch).
func (s *Sim) HostPID() int {
	if !s.hosted {
		return 0
	}
	return s.hostPID()
}

// BootOverride returns the boot device set for the next start, in
// Redfish's words (bmcsim.BootPxe, BootNone, ...).
func (s *Sim) BootOverride() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "state", "boot"))
	if err != nil {
		return bootTarget("none")
	}
	return bootTarget(strings.TrimSpace(string(b)))
}

// recordButton notes a press of the power button as the chassis control
// notes its own changes: a start uses the boot device set for it.
func (s *Sim) recordButton(on bool) error {
	state := filepath.Join(s.dir, "state")
	line := fmt.Sprintf("%d Off - SetPower\n", time.Now().UnixMilli())
	if on {
		boot := "none"
		if b, err := os.ReadFile(filepath.Join(state, "boot")); err == nil {
			boot = strings.TrimSpace(string(b))
		}
		if err := os.WriteFile(filepath.Join(state, "boot"), []byte("none\n"), 0o600); err != nil {
			return fmt.Errorf("use the boot device: %w", err)
		}
		line = fmt.Sprintf("%d On %s SetPower\n", time.Now().UnixMilli(), boot)
	}
	f, err := os.OpenFile(filepath.Join(state, "transitions"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("record the transition: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("record the transition: %w", err)
	}
	return nil
}
