package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// apiPrefix is where the simulator serves the Metal API; the metadata
// service lives outside it.
const apiPrefix = "/metal/v1"

// metalOptions shape one scenario's simulated Equinix Metal.
type metalOptions struct {
	seed int64
	// installTime is how long the simulated Harvester install takes.
	installTime time.Duration
	// heartbeat is how often joined nodes refresh their Ready condition.
	heartbeat time.Duration
}

// metal is a fresh simulator with instant device timings, its node-join
// agent, and a clock on how long the simulator spends answering.
type metalWorld struct {
	sim      *metalsim.Simulator
	agent    *joinagent.Agent
	url      string
	handling *handlingClock

	server *httptest.Server
	cancel context.CancelFunc
	ticker sync.WaitGroup
}

func startMetal(ctx context.Context, kube kubernetes.Interface, opts metalOptions, log logrus.FieldLogger) *metalWorld {
	ctx, cancel := context.WithCancel(ctx)
	// Zero Timings: every device step completes on the next access, so what
	// is measured is the controller, not simulated waiting.
	sim := metalsim.New(metalsim.Options{Timings: metalsim.Timings{}, Seed: opts.seed})
	sim.AddProject(metalToken, projectID)
	clock := &handlingClock{}
	m := &metalWorld{sim: sim, handling: clock, cancel: cancel}
	m.server = httptest.NewServer(clock.wrap(sim.Handler()))
	m.url = m.server.URL + apiPrefix
	m.agent = joinagent.New(sim, joinagent.Options{
		Kube:              kube,
		Expect:            joinagent.Expect{ServerURL: "https://" + vip + ":443", Token: joinToken},
		InstallTime:       opts.installTime,
		HeartbeatInterval: opts.heartbeat,
		Log:               agentLog(log),
	})
	m.agent.Start(ctx)
	m.ticker.Add(1)
	go func() {
		defer m.ticker.Done()
		// Applies due transitions nobody polls for; the join agent waits on them.
		sim.RunTicker(ctx, 50*time.Millisecond)
	}()
	return m
}

// stop ends the agent's heartbeats and the simulator.
func (m *metalWorld) stop() {
	m.cancel()
	m.ticker.Wait()
	m.server.Close()
}

// handlingClock sums the time the simulator spends answering Metal API
// requests: the server side of what the controller waits for.
type handlingClock struct {
	nanos atomic.Int64
	count atomic.Int64
	// inFlight counts requests being handled: a client can read a large
	// answer before the handler has returned and been counted.
	inFlight atomic.Int64
}

func (c *handlingClock) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, apiPrefix+"/") {
			next.ServeHTTP(w, r)
			return
		}
		c.inFlight.Add(1)
		defer c.inFlight.Add(-1)
		start := time.Now()
		next.ServeHTTP(w, r)
		c.nanos.Add(int64(time.Since(start)))
		c.count.Add(1)
	})
}

// settled returns the totals once no request is being handled, for a
// caller that makes one request at a time and has its answer: the
// handler's own bookkeeping after the answer is then all that is left.
func (c *handlingClock) settled() (time.Duration, int64) {
	for c.inFlight.Load() > 0 {
		runtime.Gosched()
	}
	return c.snapshot()
}

// snapshot returns the total handling time and request count so far.
func (c *handlingClock) snapshot() (time.Duration, int64) {
	return time.Duration(c.nanos.Load()), c.count.Load()
}

// agentLog keeps the join agent to warnings: a line per joined node drowns
// the benchmark's progress at 2,000 servers.
func agentLog(parent logrus.FieldLogger) logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	if e, ok := parent.(*logrus.Entry); ok {
		l.SetFormatter(e.Logger.Formatter)
		l.SetOutput(e.Logger.Out)
	}
	return l.WithField("component", "join-agent")
}
