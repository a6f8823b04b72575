package tor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
	"github.com/sirupsen/logrus"
)

// SpeakerConfig configures a device's BGP speaker the way kube-vip
// configures its own from a node's annotations: a local AS, one source
// address that is also the router ID, and the peers.
type SpeakerConfig struct {
	LocalAS  uint32
	SourceIP netip.Addr
	Peers    []SpeakerPeer
	// Log receives GoBGP's warnings and errors; nil means the standard logger.
	Log logrus.FieldLogger
}

// SpeakerPeer is one router to peer with. Port 0 means 179.
type SpeakerPeer struct {
	Address  netip.Addr
	AS       uint32
	Password string
	Port     int
}

// Speaker is a GoBGP instance playing a device's speaker (kube-vip in BGP
// mode): it connects to the routers and announces prefixes.
type Speaker struct {
	srv     *server.BgpServer
	source  netip.Addr
	peers   []SpeakerPeer
	stopped bool
}

// StartSpeaker starts the speaker and connects it to its peers.
func StartSpeaker(ctx context.Context, cfg SpeakerConfig) (*Speaker, error) {
	if !cfg.SourceIP.Is4() || cfg.LocalAS == 0 || len(cfg.Peers) == 0 {
		return nil, errors.New("a speaker needs an IPv4 source address, a local AS and at least one peer")
	}
	if cfg.Log == nil {
		cfg.Log = logrus.WithField("component", "bgp-speaker")
	}
	srv, err := startServer(ctx, cfg.Log, cfg.LocalAS, cfg.SourceIP, -1, nil)
	if err != nil {
		return nil, err
	}
	s := &Speaker{srv: srv, source: cfg.SourceIP, peers: cfg.Peers}
	for _, p := range cfg.Peers {
		port := uint32(p.Port)
		if port == 0 {
			port = 179
		}
		peer := &api.Peer{
			Conf: &api.PeerConf{NeighborAddress: p.Address.String(), PeerAsn: p.AS, AuthPassword: p.Password},
			// kube-vip retries every 10 seconds; a test wants it sooner.
			Timers:       &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}},
			Transport:    &api.Transport{LocalAddress: cfg.SourceIP.String(), RemotePort: port},
			EbgpMultihop: &api.EbgpMultihop{Enabled: true, MultihopTtl: 50},
			AfiSafis:     []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: ipv4Unicast, Enabled: true}}},
		}
		if err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: peer}); err != nil {
			s.Close()
			return nil, fmt.Errorf("add peer %s: %w", p.Address, err)
		}
	}
	return s, nil
}

// Announce advertises prefix with the speaker's address as next hop.
func (s *Speaker) Announce(ctx context.Context, prefix netip.Prefix) error {
	p, err := hostPath(prefix, s.source)
	if err != nil {
		return err
	}
	if _, err := s.srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
		return fmt.Errorf("announce %s: %w", prefix, err)
	}
	return nil
}

// Withdraw takes an announcement back.
func (s *Speaker) Withdraw(ctx context.Context, prefix netip.Prefix) error {
	p, err := hostPath(prefix, s.source)
	if err != nil {
		return err
	}
	if err := s.srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Family: ipv4Unicast, Path: p}); err != nil {
		return fmt.Errorf("withdraw %s: %w", prefix, err)
	}
	return nil
}

// Established counts the peers the speaker has an established session with.
func (s *Speaker) Established(ctx context.Context) (int, error) {
	n := 0
	err := s.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		if p.GetState().GetSessionState() == api.PeerState_ESTABLISHED {
			n++
		}
	})
	if err != nil {
		return 0, fmt.Errorf("list peers: %w", err)
	}
	return n, nil
}

// OpensSent counts the OPEN messages sent to every peer: each is a TCP
// connection a router accepted, whatever became of the session.
func (s *Speaker) OpensSent(ctx context.Context) (uint64, error) {
	var n uint64
	err := s.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		n += p.GetState().GetMessages().GetSent().GetOpen()
	})
	if err != nil {
		return 0, fmt.Errorf("list peers: %w", err)
	}
	return n, nil
}

// Close stops the speaker; its sessions close and its routes go.
func (s *Speaker) Close() error {
	if !s.stopped {
		s.stopped = true
		s.srv.Stop()
	}
	return nil
}
