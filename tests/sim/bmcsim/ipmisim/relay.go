package ipmisim

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bougou/go-ipmi/pkg/rmcpplus"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// Relay forwards datagrams between IPMI clients and a BMC on loopback, and
// is the tests' view of what travels between them, which IPMI's encrypted
// sessions hide from the BMC's own trace:
//
//   - it holds each answer back for a settable delay: a slow BMC, or a slow
//     network, for a protocol that has no HTTP layer to slow down;
//   - it can play what sits in the middle of a session setup: it rewrites
//     the cipher suite an Open Session Request asks for, so the BMC answers
//     with another suite's algorithms;
//   - it logs the session-setup messages, and when each session was in use
//     (from its first to its last message, the Close Session included).
type Relay struct {
	ln       *net.UDPConn
	upstream *net.UDPAddr
	delay    atomic.Int64
	mu       sync.Mutex
	conns    map[string]*net.UDPConn
	// askFor maps a requested suite to the one the BMC is asked for.
	askFor map[types.CipherSuiteID]types.CipherSuiteID
	setup  []string
	// spans are the sessions seen, by the BMC's session ID.
	spans map[uint32]*bmcsim.Span
	// sent counts the datagrams sent to the BMC.
	sent int
}

// NewRelay listens on a free loopback port and forwards to upstream
// (host:port). Close it when done.
func NewRelay(upstream string) (*Relay, error) {
	return NewRelayAt("127.0.0.1:0", upstream)
}

// NewRelayAt listens on listen (host:port; a BMC's own address, such as
// IPMI's port 623 on a loopback address of its own) and forwards to
// upstream. Close it when done.
func NewRelayAt(listen, upstream string) (*Relay, error) {
	up, err := net.ResolveUDPAddr("udp", upstream)
	if err != nil {
		return nil, fmt.Errorf("relay upstream %s: %w", upstream, err)
	}
	at, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return nil, fmt.Errorf("relay listen address %s: %w", listen, err)
	}
	ln, err := net.ListenUDP("udp", at)
	if err != nil {
		return nil, fmt.Errorf("relay listen: %w", err)
	}
	r := &Relay{ln: ln, upstream: up, conns: map[string]*net.UDPConn{},
		askFor: map[types.CipherSuiteID]types.CipherSuiteID{}, spans: map[uint32]*bmcsim.Span{}}
	go r.serve()
	return r, nil
}

// Close stops the relay.
func (r *Relay) Close() error {
	err := r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		_ = c.Close()
	}
	return err
}

// Port is the relay's UDP port.
func (r *Relay) Port() int { return r.ln.LocalAddr().(*net.UDPAddr).Port }

// SetDelay holds every answer back for d.
func (r *Relay) SetDelay(d time.Duration) { r.delay.Store(int64(d)) }

// Sent counts the datagrams the clients sent to the BMC: every request,
// the session setup and the retransmissions included.
func (r *Relay) Sent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent
}

// Sessions returns when each session was in use, oldest first.
func (r *Relay) Sessions() []bmcsim.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]bmcsim.Span, 0, len(r.spans))
	for _, s := range r.spans {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b bmcsim.Span) int { return a.From.Compare(b.From) })
	return out
}

// MostSessions is the largest number of sessions in use at once.
func (r *Relay) MostSessions() int { return bmcsim.MostAtOnce(r.Sessions()) }

// RewriteSuite makes every Open Session Request for suite from ask for
// suite to instead.
func (r *Relay) RewriteSuite(from, to types.CipherSuiteID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.askFor[from] = to
}

// SetupLog lists the session-setup messages seen: "open 17" (an Open
// Session Request for suite 17, as the client sent it), "answer 3" (an
// Open Session Response naming suite 3's algorithms), "rakp1", "rakp3".
func (r *Relay) SetupLog() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.setup...)
}

func (r *Relay) serve() {
	buf := make([]byte, 65535)
	for {
		n, client, err := r.ln.ReadFromUDP(buf)
		if err != nil {
			return
		}
		up, err := r.conn(client)
		if err != nil {
			return
		}
		_, _ = up.Write(r.toBMC(append([]byte(nil), buf[:n]...)))
	}
}

// toBMC logs a session-setup request and rewrites the suite it asks for,
// and follows the sessions: a message in a session carries the BMC's
// session ID in its header.
func (r *Relay) toBMC(msg []byte) []byte {
	payload, kind := setupPayload(msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent++
	if len(msg) >= 10 && msg[4] == byte(types.AuthTypeRMCPPlus) {
		if id := binary.LittleEndian.Uint32(msg[6:10]); id != 0 {
			now := time.Now()
			if s := r.spans[id]; s != nil {
				s.To = now
			} else {
				r.spans[id] = &bmcsim.Span{From: now, To: now}
			}
		}
	}
	switch kind {
	case types.PayloadTypeRmcpOpenSessionRequest:
		var req rmcpplus.OpenSessionRequest
		if req.Unpack(payload) != nil {
			return msg
		}
		asked := suiteOf(req.AuthAlg, req.IntegrityAlg, req.CryptAlg)
		r.setup = append(r.setup, fmt.Sprintf("open %d", asked))
		if to, ok := r.askFor[asked]; ok {
			auth, integrity, crypt, _ := types.GetCipherSuiteAlgorithms(to)
			payload[12], payload[20], payload[28] = uint8(auth), uint8(integrity), uint8(crypt)
		}
	case types.PayloadTypeRAKPMessage1:
		r.setup = append(r.setup, "rakp1")
	case types.PayloadTypeRAKPMessage3:
		r.setup = append(r.setup, "rakp3")
	}
	return msg
}

func (r *Relay) fromBMC(msg []byte) {
	payload, kind := setupPayload(msg)
	if kind != types.PayloadTypeRmcpOpenSessionResponse {
		return
	}
	var res rmcpplus.OpenSessionResponse
	if res.Unpack(payload) != nil || res.RmcpStatusCode != types.RmcpStatusCodeNoErrors {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setup = append(r.setup, fmt.Sprintf("answer %d", suiteOf(res.AuthAlg, res.IntegrityAlg, res.CryptAlg)))
}

// setupPayload returns the payload of an RMCP+ session-setup message (a
// slice of msg) and its type; 0 for any other message.
func setupPayload(msg []byte) ([]byte, types.PayloadType) {
	// RMCP header (4), auth type 06h, payload type, session ID (4),
	// sequence (4), payload length (2): the payload starts at 16.
	if len(msg) < 16 || msg[4] != byte(types.AuthTypeRMCPPlus) {
		return nil, 0
	}
	return msg[16:], types.PayloadType(msg[5] & 0x3f)
}

// suiteOf names the suite of three algorithms; 255 when none has them.
func suiteOf(auth, integrity, crypt uint8) types.CipherSuiteID {
	for id := types.CipherSuiteID(0); id <= types.CipherSuiteID(19); id++ {
		a, i, c, ok := types.GetCipherSuiteAlgorithms(id)
		if ok && uint8(a) == auth && uint8(i) == integrity && uint8(c) == crypt {
			return id
		}
	}
	return 255
}

// conn returns the upstream socket of one client, so each client keeps its
// own source port towards the BMC, as it would without the relay.
func (r *Relay) conn(client *net.UDPAddr) (*net.UDPConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.conns[client.String()]; ok {
		return c, nil
	}
	c, err := net.DialUDP("udp", nil, r.upstream)
	if err != nil {
		return nil, err
	}
	r.conns[client.String()] = c
	go func() {
		buf := make([]byte, 65535)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			msg := append([]byte(nil), buf[:n]...)
			r.fromBMC(msg)
			time.AfterFunc(time.Duration(r.delay.Load()), func() { _, _ = r.ln.WriteToUDP(msg, client) })
		}
	}()
	return c, nil
}
