package ipmisim

import (
	"fmt"
	"syscall"
	"time"
)

// Stop ends ipmi_sim. A hosted Sim is ended with its host: its process
// group (ipmi_sim, the host's program, the chassis control's watchdog) is
// killed at once, while ipmi_sim, its leader, is not yet reaped, so the
// group's id cannot belong to anyone else. Otherwise Stop asks ipmi_sim to
// quit on its console and waits for it; if it has not gone after five
// seconds it is killed by its PID.
func (s *Sim) Stop() error {
	if err := s.stop(); err != nil {
		return err
	}
	<-s.transitions.followed
	return nil
}

func (s *Sim) stop() error {
	s.consoleMu.Lock()
	if s.console != nil {
		if !s.hosted {
			_, _ = fmt.Fprintf(s.console, "quit\n")
		}
		_ = s.console.Close()
		s.console = nil
	}
	s.consoleMu.Unlock()
	if s.hosted {
		return s.killGroup()
	}
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		if err := s.kill(); err != nil {
			return err
		}
	}
	_ = s.stdin.Close()
	return nil
}

// killGroup kills ipmi_sim's process group and waits for ipmi_sim.
func (s *Sim) killGroup() error {
	select {
	case <-s.exited:
		// Reaped already (it died on its own): its group id may be free
		// for reuse, so only the host, by its own pid, is ended.
		if pid := s.hostPID(); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return nil
	default:
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill ipmi_sim's process group %d: %w", s.cmd.Process.Pid, err)
	}
	<-s.exited
	_ = s.stdin.Close()
	return nil
}

// kill ends this ipmi_sim by PID and waits for it.
func (s *Sim) kill() error {
	if err := s.cmd.Process.Kill(); err != nil {
		select {
		case <-s.exited:
			return nil
		default:
		}
		return fmt.Errorf("kill ipmi_sim (pid %d): %w", s.cmd.Process.Pid, err)
	}
	<-s.exited
	return nil
}
