// Package standalone runs the Metal simulator as a long-lived server on the
// real clock: the harvester-equinix-addon-simulator command (tests/cmd/simulator),
// and demos or benchmarks that want the same set-up in-process. It wires the simulator,
// its HTTP listener, the ticker that applies transitions nobody polls for,
// the optional node-join agent and a progress log.
//
// Projects, tokens, hardware reservations and spot prices come from Config,
// which the command fills from its flags and from a seed file (YAML or
// JSON, read by ReadSeedFile; SeedFormat documents it):
//
//	projects:
//	  - id: <project UUID>
//	    tokens: [<token>, ...]
//	    hardware_reservations:
//	      - {plan: c3.small.x86, metro: da, facility: da11, count: 3, spare: false}
//	spot_market:
//	  - {metro: da, plan: c3.small.x86, price: 0.25, capacity: 10}
//
// Reservations need plan and metro or facility (count defaults to 1); a
// spot market entry's capacity may be left out for no limit. Unknown fields
// are refused; errors never repeat a token.
package standalone

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// RealInstallTime is how long a Harvester install took on real servers; the
// join agent's install time is this scaled by Config.TimingScale unless set.
const RealInstallTime = 15 * time.Minute

// DefaultTickInterval bounds how late a due transition is applied when no
// client polls, which is what the join agent waits on.
const DefaultTickInterval = 100 * time.Millisecond

// minInstallTime keeps a scale of 0 from racing the Node against the device's
// own state change.
const minInstallTime = 10 * time.Millisecond

// Project gives Token access to the project ID.
type Project struct {
	Token string
	ID    string
}

// Config describes a standalone simulator.
type Config struct {
	// Listen is the TCP address; empty means 127.0.0.1 on a free port.
	Listen string
	// Projects must hold at least one project.
	Projects []Project
	// Reservations are hardware reservations to add to the projects.
	Reservations []Reservation
	// SpotMarket sets spot prices and capacities.
	SpotMarket []metalsim.SpotMarket
	// TimingScale multiplies metalsim.DefaultTimings: 1 is realistic,
	// 0.01 runs an 8-minute provision in under 5 seconds, 0 is instant.
	TimingScale float64
	// Seed makes generated IDs and probabilistic faults reproducible.
	Seed int64
	// RateLimit, when positive, answers 429 once a token exceeds that many
	// requests per minute.
	RateLimit int
	// TickInterval defaults to DefaultTickInterval.
	TickInterval time.Duration
	// ElasticIPs are reservations of given blocks the projects hold from the
	// start, such as the cluster's VIP; see ParseElasticIP.
	ElasticIPs []ElasticIP
	// Join, when set, runs the node-join agent against a real cluster.
	Join *Join
	// Log receives progress lines; nil means the standard logger.
	Log logrus.FieldLogger
}

// ElasticIP is a reservation added at start. An empty ProjectID means the
// first project.
type ElasticIP struct {
	ProjectID string
	metalsim.IPReservationSpec
}

// ParseElasticIP reads "<block>@<metro>" (a public_ipv4 reservation, e.g.
// "10.0.0.10/32@da") or "<block>" alone (global_ipv4), as a flag takes it.
func ParseElasticIP(s string) (ElasticIP, error) {
	block, metro, found := strings.Cut(strings.TrimSpace(s), "@")
	if block == "" || (found && metro == "") {
		return ElasticIP{}, fmt.Errorf("elastic IP %q: want <block>@<metro> or <block>", s)
	}
	spec := metalsim.IPReservationSpec{CIDR: block, Metro: metro, Type: "public_ipv4"}
	if !found {
		spec.Type = "global_ipv4"
	}
	return ElasticIP{IPReservationSpec: spec}, nil
}

// Join configures the node-join agent.
type Join struct {
	Kube kubernetes.Interface
	// ClusterURL is the URL (or VIP) joining servers must name; it is
	// normalized to the installer's https://host:443 form.
	ClusterURL string
	// Token is the join token servers must present. It is never logged.
	Token string
	// InstallTime defaults to RealInstallTime scaled by Config.TimingScale.
	InstallTime time.Duration
	// HeartbeatInterval defaults to the agent's default (10s).
	HeartbeatInterval time.Duration
	// Maintenance also plays Harvester's maintenance controller, completing
	// the maintenance mode the addon requests before it removes a server.
	Maintenance bool
}

// Simulator is a running standalone simulator.
type Simulator struct {
	// Sim is the simulator itself, for hooks such as InjectFault.
	Sim *metalsim.Simulator
	// Agent is nil without Config.Join.
	Agent *joinagent.Agent
	// URL is the API base URL ending in /metal/v1.
	URL string
	// RootURL serves the metadata service.
	RootURL string

	server      *metalsim.Server
	cancel      context.CancelFunc
	unsubscribe func()
	ticker      sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error
}

// Start validates cfg, starts serving and returns once the listener is up.
// Everything stops when ctx ends or Close is called; Close must be called
// either way to release the listener.
func Start(ctx context.Context, cfg Config) (*Simulator, error) {
	expect, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = logrus.WithField("component", "metal-simulator")
	}
	sim := metalsim.New(metalsim.Options{
		Timings:   metalsim.DefaultTimings().Scale(cfg.TimingScale),
		Seed:      cfg.Seed,
		RateLimit: cfg.RateLimit,
	})
	for _, p := range cfg.Projects {
		sim.AddProject(p.Token, p.ID)
	}
	if err := seed(sim, cfg); err != nil {
		return nil, err
	}
	for _, e := range cfg.ElasticIPs {
		project := e.ProjectID
		if project == "" {
			project = cfg.Projects[0].ID
		}
		if _, err := sim.AddIPReservation(project, e.IPReservationSpec); err != nil {
			return nil, fmt.Errorf("elastic IP %s: %w", e.CIDR, err)
		}
		log.WithField("project", project).Infof("elastic IP %s reserved", e.CIDR)
	}
	srv, err := metalsim.NewServer(sim, cfg.Listen)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Simulator{Sim: sim, URL: srv.URL, RootURL: srv.RootURL, server: srv, cancel: cancel}
	s.unsubscribe = sim.Subscribe(progressLogger(log))
	if cfg.Join != nil {
		s.Agent = joinagent.New(sim, joinagent.Options{
			Kube:              cfg.Join.Kube,
			Expect:            expect,
			InstallTime:       installTime(cfg),
			HeartbeatInterval: cfg.Join.HeartbeatInterval,
			Log:               log.WithField("component", "join-agent"),
		})
		s.Agent.Start(ctx)
		if cfg.Join.Maintenance {
			go s.Agent.EmulateMaintenance(ctx, time.Second)
		}
	}
	interval := cfg.TickInterval
	if interval <= 0 {
		interval = DefaultTickInterval
	}
	s.ticker.Add(1)
	go func() {
		defer s.ticker.Done()
		sim.RunTicker(ctx, interval)
	}()
	log.WithField("url", s.URL).WithField("projects", len(cfg.Projects)).
		WithField("join-agent", s.Agent != nil).Infof("Metal simulator listening (timing scale %g)", cfg.TimingScale)
	return s, nil
}

// Close stops the ticker and the agent and shuts the listener down.
func (s *Simulator) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.ticker.Wait()
		s.unsubscribe()
		s.closeErr = s.server.Close()
	})
	return s.closeErr
}

func validate(cfg Config) (joinagent.Expect, error) {
	if len(cfg.Projects) == 0 {
		return joinagent.Expect{}, errors.New("at least one project is required")
	}
	for i, p := range cfg.Projects {
		if strings.TrimSpace(p.Token) == "" || strings.TrimSpace(p.ID) == "" {
			return joinagent.Expect{}, fmt.Errorf("project %d: token and project ID are required", i+1)
		}
	}
	for i, r := range cfg.Reservations {
		if !slices.ContainsFunc(cfg.Projects, func(p Project) bool { return p.ID == r.ProjectID }) {
			return joinagent.Expect{}, fmt.Errorf("hardware reservation %d: project %q is not served", i+1, r.ProjectID)
		}
	}
	if cfg.TimingScale < 0 {
		return joinagent.Expect{}, fmt.Errorf("timing scale %g is negative", cfg.TimingScale)
	}
	if cfg.Join == nil {
		return joinagent.Expect{}, nil
	}
	if cfg.Join.Kube == nil {
		return joinagent.Expect{}, errors.New("the join agent needs a Kubernetes client")
	}
	url, err := harvester.NormalizeServerURL(cfg.Join.ClusterURL)
	if err != nil {
		return joinagent.Expect{}, fmt.Errorf("join agent cluster URL: %w", err)
	}
	// The agent compares tokens, so an invalid one would only make every
	// install fail; say so at start-up instead. The error names no token.
	if err := harvester.ValidateToken(cfg.Join.Token); err != nil {
		return joinagent.Expect{}, fmt.Errorf("join agent token: %w", err)
	}
	return joinagent.Expect{ServerURL: url, Token: cfg.Join.Token}, nil
}

func installTime(cfg Config) time.Duration {
	if cfg.Join.InstallTime > 0 {
		return cfg.Join.InstallTime
	}
	return max(time.Duration(float64(RealInstallTime)*cfg.TimingScale), minInstallTime)
}

// progressLogger logs one line per device state change, so a demo shows
// provisioning advance. It reads only names and states: userdata carries the
// join token and must never reach a log.
func progressLogger(log logrus.FieldLogger) func(metalsim.Notification) {
	return func(n metalsim.Notification) {
		entry := log.WithField("device", n.DeviceID).WithField("project", n.ProjectID)
		switch n.Type {
		case metalsim.DeviceCreated:
			entry.Infof("device %s %s", n.Hostname, n.State)
		case metalsim.DeviceStateChanged:
			entry.WithField("previous", n.PreviousState).Infof("device %s %s", n.Hostname, n.State)
		case metalsim.DeviceDeleted:
			if n.OutOfBand {
				entry = entry.WithField("out-of-band", true)
			}
			entry.Infof("device %s deleted", n.Hostname)
		}
	}
}
