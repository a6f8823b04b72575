package ipmisim

import (
	"fmt"
	"time"
)

// Stop asks ipmi_sim to quit on its console and waits for it; if it has not
// gone after five seconds it is killed by its PID.
func (s *Sim) Stop() error {
	s.consoleMu.Lock()
	if s.console != nil {
		_, _ = fmt.Fprintf(s.console, "quit\n")
		_ = s.console.Close()
		s.console = nil
	}
	s.consoleMu.Unlock()
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
