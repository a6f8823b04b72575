package ownedfleet

import (
	"context"
	"time"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// server is one simulated server. Its transitions, boots and Node writes
// run in order on its own goroutine, so a power off is never overtaken by
// the writes of the boot before it.
type server struct {
	fleet *Fleet
	spec  Spec
	work  chan func(context.Context)

	// Only the server's goroutine touches these.
	// gen counts the host's starts and stops: an install finishing after
	// another transition is dropped.
	gen int
	// hostname is the Node of the last good install ("" before one);
	// running is whether its kubelet runs.
	hostname string
	running  bool
	labels   map[string]string
	// host: the server's firmware and iPXE are real, and Install plays
	// its installer (AddHost); netStart is the gen of its last network
	// start, the one an Install belongs to.
	host     bool
	netStart int
	// snapshot is read by NodeNames from other goroutines.
	snapshot chan nodeSnapshot
}

type nodeSnapshot struct {
	name    string
	running bool
}

func newServer(ctx context.Context, f *Fleet, spec Spec) *server {
	s := &server{fleet: f, spec: spec, work: make(chan func(context.Context), 64), snapshot: make(chan nodeSnapshot, 1)}
	s.snapshot <- nodeSnapshot{}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case fn := <-s.work:
				fn(ctx)
			}
		}
	}()
	return s
}

// push queues fn on the server's goroutine. The BMC calls transition on
// its request's goroutine, which must not wait for the apiserver.
func (s *server) push(fn func(context.Context)) {
	go func() { s.work <- fn }()
}

// transition follows one change of the host's power. Queued in order
// through one channel send per transition, taken in the BMC's order.
func (s *server) transition(t bmcsim.PowerTransition) {
	s.work <- func(ctx context.Context) { s.follow(ctx, t) }
}

func (s *server) follow(ctx context.Context, t bmcsim.PowerTransition) {
	s.gen++
	if t.Change == bmcsim.PowerChangeOff || t.Change == bmcsim.PowerChangeRestart {
		s.stopKubelet(ctx, "the server is powered off")
	}
	if t.Change == bmcsim.PowerChangeOff {
		return
	}
	image := t.BootImage()
	if !t.NetworkBoot() && image == "" {
		s.bootDisk(ctx)
		return
	}
	if s.host {
		// Its own iPXE boots; Install follows what it booted.
		s.netStart = s.gen
		return
	}
	r, in, ok := s.netboot(ctx, image)
	if !ok {
		s.fleet.record(r)
		// iPXE gives up and the firmware boots the next device: the disk.
		s.bootDisk(ctx)
		return
	}
	s.startInstall(r, in)
}

// startInstall runs the installer whose configuration checked out: the
// Node registers after InstallTime unless the server is powered off or
// booted again meanwhile.
func (s *server) startInstall(r Result, in joinagent.Install) {
	gen := s.gen
	// The installer runs; the disk's old OS is gone.
	s.hostname, s.labels = "", nil
	s.setSnapshot()
	time.AfterFunc(s.fleet.opts.InstallTime, func() {
		s.push(func(ctx context.Context) {
			if s.gen != gen {
				return // powered off, or booted again, meanwhile
			}
			s.finishInstall(ctx, r, in)
		})
	})
}

// bootDisk starts the installed OS, if there is one.
func (s *server) bootDisk(ctx context.Context) {
	if s.hostname == "" || s.running {
		return
	}
	s.startKubelet(ctx)
}

func (s *server) setSnapshot() {
	<-s.snapshot
	s.snapshot <- nodeSnapshot{name: s.hostname, running: s.running}
}

// node is the server's Node and whether its kubelet runs.
func (s *server) node() (string, bool) {
	snap := <-s.snapshot
	s.snapshot <- snap
	return snap.name, snap.running
}
