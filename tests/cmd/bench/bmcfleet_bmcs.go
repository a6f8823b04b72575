package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// fleetBMC is one simulated BMC of the fleet scenario and what the
// benchmark reads of it.
type fleetBMC struct {
	node     string
	protocol string
	// connection is the Inventory's (the Secret is added by the caller).
	connection seederv1alpha1.Connection
	// sessions are when each session was in use, oldest first.
	sessions func() []bmcsim.Span
	// requests is every request so far (IPMI: every datagram to the BMC,
	// the session setup included), and its reads in order as keys equal
	// for a repetition (a GET of one resource, an IPMI command with its
	// data), the session's own requests left out.
	requests func() (total int, reads []bmcRead)
	// addLogEntry puts an entry into the BMC's event log.
	addLogEntry func() error
	stop        func()
}

// bmcRead is one read a BMC served: a key equal for a repetition, and
// when it came (zero when the BMC does not say).
type bmcRead struct {
	key string
	at  time.Time
}

// redfishFleetBMC is the project's Redfish responder, in this process.
func redfishFleetBMC(node string) (*fleetBMC, error) {
	sim := bmcsim.New(bmcsim.Options{Username: bmcBenchUser, Password: bmcBenchPassword})
	srv, err := bmcsim.NewServer(sim, "")
	if err != nil {
		return nil, err
	}
	return &fleetBMC{
		node: node, protocol: "redfish",
		connection: seederv1alpha1.Connection{Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM)},
		sessions:   sim.SessionSpans,
		requests: func() (int, []bmcRead) {
			log := sim.RequestLog()
			var reads []bmcRead
			for _, r := range log {
				if strings.HasPrefix(r, "GET ") {
					reads = append(reads, bmcRead{key: r})
				}
			}
			return len(log), reads
		},
		addLogEntry: func() error {
			sim.AddLogEntry("Warning", "Fleet benchmark: correctable memory error")
			return nil
		},
		stop: func() { _ = srv.Close() },
	}, nil
}

// ipmiFleetBMC is OpenIPMI's ipmi_sim behind a relay that counts
// datagrams and sessions.
func ipmiFleetBMC(node string) (*fleetBMC, error) {
	b, err := ownedfleet.StartIPMI(ipmisim.Options{Username: bmcBenchUser, Password: bmcBenchPassword})
	if err != nil {
		return nil, err
	}
	sim, relay := b.Sim, b.Relay
	return &fleetBMC{
		node: node, protocol: "ipmi",
		connection: relayedIPMIConnection(relay),
		sessions:   relay.Sessions,
		requests: func() (int, []bmcRead) {
			var reads []bmcRead
			for _, m := range sim.Messages() {
				// Close Session and a keep-alive are the session's own
				// (Set Session Privilege Level stays: a poll needs it).
				if m.NetFn == 0x06 && (m.Cmd == 0x3c || m.Cmd == 0x3d) {
					continue
				}
				reads = append(reads, bmcRead{key: fmt.Sprintf("%02x/%02x %s", m.NetFn, m.Cmd, m.Data), at: m.At})
			}
			return relay.Sent(), reads
		},
		addLogEntry: func() error {
			_, err := sim.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, 1, 0)
			return err
		},
		stop: func() { _ = b.Close() },
	}, nil
}

// startFleetBMCs starts n BMCs, every ipmiEvery-th an ipmi_sim (0: none),
// the rest Redfish responders.
func startFleetBMCs(ctx context.Context, n, ipmiEvery int) ([]*fleetBMC, error) {
	out := make([]*fleetBMC, n)
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i := range out {
		node := fmt.Sprintf("fleet-bmc-%04d", i)
		start := redfishFleetBMC
		if ipmiEvery > 0 && i%ipmiEvery == ipmiEvery-1 {
			start = ipmiFleetBMC
		}
		g.Go(func() error {
			// An ipmi_sim started while the machine is busy may miss its
			// console's deadline: it is started again, a few times.
			var err error
			for range 3 {
				if out[i], err = start(node); err == nil {
					return nil
				}
			}
			return err
		})
	}
	err := g.Wait()
	if err != nil {
		stopFleetBMCs(out)
		return nil, err
	}
	return out, nil
}

func stopFleetBMCs(bmcs []*fleetBMC) {
	var wg sync.WaitGroup
	for _, bb := range bmcs {
		if bb != nil {
			wg.Go(bb.stop)
		}
	}
	wg.Wait()
}

// bmcTally is what a protocol's BMCs saw in a window.
type bmcTally struct {
	bmcs, sessions, requests int
	// least sums each BMC's minimum of one poll: its session's setup and
	// end, and each distinct read of the window once.
	least int
	// polled counts the BMCs that had a session in the window.
	polled int
	// starts are the sessions' beginnings.
	starts []time.Time
}

// leastPerPoll is the mean minimum of one poll of the BMCs polled.
func (t *bmcTally) leastPerPoll() float64 {
	if t.polled == 0 {
		return 0
	}
	return float64(t.least) / float64(t.polled)
}

// bmcCount is one BMC's counts at a moment.
type bmcCount struct{ requests, reads int }

// fleetCounts is a snapshot of every BMC's counts.
type fleetCounts map[string]bmcCount

func countFleet(bmcs []*fleetBMC) fleetCounts {
	out := fleetCounts{}
	for _, bb := range bmcs {
		total, reads := bb.requests()
		out[bb.node] = bmcCount{requests: total, reads: len(reads)}
	}
	return out
}

// sessionSetup is the requests of a session's setup and end: Redfish's
// login and logout; IPMI's Get Channel Authentication Capabilities, Open
// Session, RAKP 1 and 3, and Close Session.
func sessionSetup(protocol string) int {
	if protocol == "ipmi" {
		return 5
	}
	return 2
}

// tally sums, per protocol, what the BMCs saw between two snapshots
// taken at from and to.
func tally(bmcs []*fleetBMC, before, after fleetCounts, from, to time.Time) map[string]*bmcTally {
	out := map[string]*bmcTally{}
	for _, bb := range bmcs {
		t := out[bb.protocol]
		if t == nil {
			t = &bmcTally{}
			out[bb.protocol] = t
		}
		b, a := before[bb.node], after[bb.node]
		t.bmcs++
		t.requests += a.requests - b.requests
		// A session counts in the window it ended in, as a poll counts
		// where its status arrived: both come at the poll's end.
		spans := bb.sessions()
		polls := 0
		for _, s := range spans {
			if !s.To.Before(from) && s.To.Before(to) {
				polls++
				t.starts = append(t.starts, s.From)
			}
		}
		t.sessions += polls
		if polls > 0 {
			_, reads := bb.requests()
			t.polled += polls
			t.least += polls*sessionSetup(bb.protocol) + distinctPerSession(reads[b.reads:min(a.reads, len(reads))], spans, polls)
		}
	}
	return out
}

// distinctPerSession sums the distinct reads of each session: reads that
// carry their time are grouped by the session they fell in (an IPMI read
// names the reservation it belongs to, which differs between polls); the
// others (Redfish, whose polls read the same resources each time) count
// once per poll.
func distinctPerSession(reads []bmcRead, sessions []bmcsim.Span, polls int) int {
	groups := map[int]map[string]bool{}
	timed := false
	for _, r := range reads {
		g := 0
		if !r.at.IsZero() {
			timed = true
			g = sort.Search(len(sessions), func(i int) bool { return sessions[i].From.After(r.at) })
		}
		if groups[g] == nil {
			groups[g] = map[string]bool{}
		}
		groups[g][r.key] = true
	}
	n := 0
	for _, keys := range groups {
		n += len(keys)
	}
	if !timed {
		n *= polls
	}
	return n
}
