package ownedfleet

import (
	"context"
	"fmt"

	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// AddHost makes spec a server whose firmware and iPXE are real: a QEMU
// machine (tests/vmrig) that its BMC starts and ends. The fleet follows
// its power as any server's (the kubelet stops at a power off, an
// installed server's starts again from its disk) but makes no network
// boot of its own: the machine's iPXE asks the boot endpoint, and Install
// plays the installer it booted, which the machine cannot run.
func (f *Fleet) AddHost(spec Spec, power PowerSource) error { return f.add(spec, power, true) }

// Install plays the installer that real iPXE booted on the server of
// AddHost named name, since its last network start: the kernel it
// fetched and the command line it gave it; requests are what the machine
// asked for until then, in the form a Result records. From there the
// server goes as after the fleet's own network boot: the configuration
// fetched from config_url and checked, the Node registered after
// InstallTime, the outcome recorded. An Install after the server was
// powered off or started again is dropped.
func (f *Fleet) Install(name string, boot joinagent.Boot, requests []string) error {
	f.mu.Lock()
	s, ok := f.servers[name]
	f.mu.Unlock()
	if !ok || !s.host {
		return fmt.Errorf("no server %s of AddHost", name)
	}
	s.push(func(ctx context.Context) {
		if s.netStart == 0 || s.netStart != s.gen {
			return // another start since, or this one's installer ran
		}
		s.netStart = 0
		r := Result{Server: name, Requests: append([]string(nil), requests...)}
		in, err := s.install(ctx, &r, boot)
		if err != nil {
			r.Reason = scrub(err.Error(), f.opts.Expect.Token)
			f.opts.Log.Infof("server %s: %s", name, r.Reason)
			f.record(r)
			return
		}
		s.startInstall(r, in)
	})
	return nil
}

// Shown is a URL as a Result records it: a nonce hidden.
func Shown(rawURL string) string { return scrub(rawURL) }
