package tor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
	"github.com/sirupsen/logrus"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// MetalPeerAS is the AS of Equinix Metal's routers.
const MetalPeerAS = 65530

// Defaults: the routers stand in for 169.254.255.1 and .2, devices get
// private addresses from a loopback block.
var (
	DefaultRouterIPs   = []netip.Addr{netip.MustParseAddr("127.254.255.1"), netip.MustParseAddr("127.254.255.2")}
	DefaultPrivatePool = netip.MustParsePrefix("127.64.0.0/10")
)

// resyncInterval bounds how stale the reported state can get if a GoBGP
// event was missed; events normally trigger a sync at once.
const resyncInterval = 500 * time.Millisecond

// Config configures the routers. Zero values pick the defaults.
type Config struct {
	// RouterIPs are the routers' addresses, one GoBGP server each; they
	// must be local addresses (any of 127.0.0.0/8 needs no set-up).
	RouterIPs []netip.Addr
	// Port is the BGP port every router listens on. 0 picks a free port;
	// read it back with Port. Real speakers assume 179, which needs root.
	Port int
	// PrivatePool is where devices' private addresses come from.
	PrivatePool netip.Prefix
	// Log receives GoBGP's warnings and errors; nil means the standard logger.
	Log logrus.FieldLogger
}

// ToR is a running top-of-rack: GoBGP routers in AS 65530 that accept the
// simulator's BGP sessions and route each Elastic IP to the device whose
// speaker announces it.
type ToR struct {
	sim     *metalsim.Simulator
	port    int
	routers []*router
	log     logrus.FieldLogger
	poke    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}

	// md5 says whether the routers' listeners can check MD5 passwords.
	md5       bool
	md5Warned bool

	mu     sync.Mutex
	routes map[netip.Prefix]string
	err    error

	closeOnce sync.Once
}

type router struct {
	ip  netip.Addr
	srv *server.BgpServer
	// peers are the configured neighbors by address.
	peers map[netip.Addr]neighbor
	// policy is the import filter last installed, to skip identical ones.
	policy string
}

// Start attaches routers to sim and serves until ctx ends or Close. It must
// run before the simulator gives any device a private address.
func Start(ctx context.Context, sim *metalsim.Simulator, cfg Config) (*ToR, error) {
	if len(cfg.RouterIPs) == 0 {
		cfg.RouterIPs = DefaultRouterIPs
	}
	if !cfg.PrivatePool.IsValid() {
		cfg.PrivatePool = DefaultPrivatePool
	}
	if cfg.Log == nil {
		cfg.Log = logrus.WithField("component", "tor")
	}
	changed, err := sim.AttachRouters(metalsim.Routers{PeerIPs: cfg.RouterIPs, PrivatePool: cfg.PrivatePool})
	if err != nil {
		return nil, fmt.Errorf("attach routers: %w", err)
	}
	md5 := md5Listening(cfg.RouterIPs[0])
	routers, port, err := startRouters(ctx, cfg)
	if err != nil {
		sim.DetachRouters()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &ToR{
		sim: sim, port: port, routers: routers, log: cfg.Log, poke: make(chan struct{}, 1),
		cancel: cancel, done: make(chan struct{}), routes: map[netip.Prefix]string{}, md5: md5,
	}
	for _, r := range routers {
		watch := &api.WatchEventRequest{
			Peer:  &api.WatchEventRequest_Peer{},
			Table: &api.WatchEventRequest_Table{Filters: []*api.WatchEventRequest_Table_Filter{{Type: api.WatchEventRequest_Table_Filter_BEST}}},
		}
		if err := r.srv.WatchEvent(ctx, watch, func(*api.WatchEventResponse) { t.wake() }); err != nil {
			cancel()
			t.stopRouters()
			sim.DetachRouters()
			return nil, fmt.Errorf("watch router %s: %w", r.ip, err)
		}
	}
	go t.run(ctx, changed)
	return t, nil
}

// startRouters starts one GoBGP server per address on one port, picking
// a free port again when another process took the one chosen.
func startRouters(ctx context.Context, cfg Config) ([]*router, int, error) {
	for attempt := 0; ; attempt++ {
		port := cfg.Port
		if port == 0 {
			p, err := freePort(cfg.RouterIPs[0])
			if err != nil {
				return nil, 0, err
			}
			port = p
		}
		var routers []*router
		var err error
		for _, ip := range cfg.RouterIPs {
			var srv *server.BgpServer
			srv, err = startServer(ctx, cfg.Log, MetalPeerAS, ip, port, []netip.Addr{ip})
			if err != nil {
				break
			}
			routers = append(routers, &router{ip: ip, srv: srv, peers: map[netip.Addr]neighbor{}})
		}
		if err == nil {
			return routers, port, nil
		}
		for _, r := range routers {
			r.srv.Stop()
		}
		if cfg.Port != 0 || attempt == 4 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, 0, err
		}
	}
}

func freePort(ip netip.Addr) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer l.Close()
	_, p, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("read port of %s: %w", l.Addr(), err)
	}
	return strconv.Atoi(p)
}

// Port is the TCP port the routers listen on.
func (t *ToR) Port() int { return t.port }

// RouterIPs are the routers' addresses, the peer_ips of every neighbor.
func (t *ToR) RouterIPs() []netip.Addr {
	out := make([]netip.Addr, 0, len(t.routers))
	for _, r := range t.routers {
		out = append(out, r.ip)
	}
	return out
}

// RouteOf returns the device prefix is routed to: the source of the best
// path of the first router that has one.
func (t *ToR) RouteOf(prefix netip.Prefix) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.routes[prefix.Masked()]
	return id, ok
}

// MD5Available reports whether the routers check MD5 passwords. Without
// it a session of a project with a password is kept administratively down
// rather than accepted unchecked.
func (t *ToR) MD5Available() bool { return t.md5 }

// Err returns the last synchronisation failure, or nil once one succeeded.
func (t *ToR) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Close stops the routers and detaches them from the simulator.
func (t *ToR) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		<-t.done
		t.stopRouters()
		t.sim.DetachRouters()
	})
	return nil
}

func (t *ToR) stopRouters() {
	for _, r := range t.routers {
		r.srv.Stop()
	}
}

func (t *ToR) wake() {
	select {
	case t.poke <- struct{}{}:
	default:
	}
}

// run keeps the routers in line with the simulator and reports back what
// they see, on every change either side signals and at resyncInterval.
func (t *ToR) run(ctx context.Context, changed <-chan struct{}) {
	defer close(t.done)
	tick := time.NewTicker(resyncInterval)
	defer tick.Stop()
	for {
		err := t.sync(ctx)
		t.mu.Lock()
		t.err = err
		t.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			t.log.WithError(err).Warn("top-of-rack sync failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.poke:
		case <-tick.C:
		}
	}
}
