package tor

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/types/known/anypb"
)

// ipv4Unicast is the only address family the routers carry.
var ipv4Unicast = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}

// startServer runs a GoBGP server in this process. A negative port makes
// it listen nowhere (a speaker that only connects out).
func startServer(ctx context.Context, log logrus.FieldLogger, asn uint32, routerID netip.Addr, port int, listen []netip.Addr) (*server.BgpServer, error) {
	srv := server.NewBgpServer(server.LoggerOption(&quietLogger{log: log}))
	go srv.Serve()
	g := &api.Global{Asn: asn, RouterId: routerID.String(), ListenPort: int32(port)}
	for _, a := range listen {
		g.ListenAddresses = append(g.ListenAddresses, a.String())
	}
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: g}); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("start BGP on %s port %d: %w", routerID, port, err)
	}
	return srv, nil
}

// hostPath is an IPv4 unicast path for prefix with the given next hop.
func hostPath(prefix netip.Prefix, nextHop netip.Addr) (*api.Path, error) {
	nlri, err := anypb.New(&api.IPAddressPrefix{Prefix: prefix.Addr().String(), PrefixLen: uint32(prefix.Bits())})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", prefix, err)
	}
	origin, err := anypb.New(&api.OriginAttribute{Origin: 0})
	if err != nil {
		return nil, fmt.Errorf("encode origin: %w", err)
	}
	nh, err := anypb.New(&api.NextHopAttribute{NextHop: nextHop.String()})
	if err != nil {
		return nil, fmt.Errorf("encode next hop: %w", err)
	}
	return &api.Path{Family: ipv4Unicast, Nlri: nlri, Pattrs: []*anypb.Any{origin, nh}}, nil
}

// quietLogger passes GoBGP's warnings and errors on and drops the rest:
// it logs every state change at info level. Fields that could carry a
// password are dropped.
type quietLogger struct {
	log logrus.FieldLogger
}

var _ gobgplog.Logger = (*quietLogger)(nil)

func (l *quietLogger) entry(fields gobgplog.Fields) logrus.FieldLogger {
	e := l.log
	for k, v := range fields {
		if strings.Contains(strings.ToLower(k), "pass") || k == gobgplog.FieldFacility {
			continue
		}
		e = e.WithField(k, v)
	}
	return e
}

func (l *quietLogger) Panic(msg string, fields gobgplog.Fields) { l.entry(fields).Error(msg) }
func (l *quietLogger) Fatal(msg string, fields gobgplog.Fields) { l.entry(fields).Error(msg) }
func (l *quietLogger) Error(msg string, fields gobgplog.Fields) { l.entry(fields).Error(msg) }
func (l *quietLogger) Warn(msg string, fields gobgplog.Fields)  { l.entry(fields).Warn(msg) }
func (l *quietLogger) Info(string, gobgplog.Fields)             {}
func (l *quietLogger) Debug(string, gobgplog.Fields)            {}
func (l *quietLogger) SetLevel(gobgplog.LogLevel)               {}
func (l *quietLogger) GetLevel() gobgplog.LogLevel              { return gobgplog.WarnLevel }
