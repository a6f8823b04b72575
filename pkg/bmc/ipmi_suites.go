package bmc

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/bougou/go-ipmi/pkg/rmcpplus"
	"github.com/bougou/go-ipmi/pkg/types"
)

// Cipher suites offered, best first: 17 (HMAC-SHA256, AES-128) and 3
// (HMAC-SHA1, AES-128), which every IPMI 2.0 BMC has. They are tried one
// at a time, and a refused password ends the login at once: BMCs lock
// accounts after a few failed logins, and the other suite would only fail
// again (see connect).
var cipherSuites = []types.CipherSuiteID{types.CipherSuiteID17, types.CipherSuiteID3}

// errDowngrade marks an Open Session Response whose algorithms are not the
// ones asked for.
var errDowngrade = errors.New("the BMC answered with other algorithms than asked for")

// suiteGuard checks the RMCP+ Open Session Response against the request.
// go-ipmi takes whatever algorithms the answer names and goes on with
// them, so a BMC (or anything on the way) could turn a request for suite
// 17 into a session of another suite, or of none at all: no
// authentication, no integrity, no encryption. The library has no hook in
// its session setup, but it dials its UDP socket through a proxy dialer
// when given one (Client.WithUDPProxy): the guard is that dialer, and the
// socket it returns reads every datagram. An answer naming other
// algorithms than the request fails the read, before go-ipmi sends the
// user name or uses the password.
type suiteGuard struct {
	mu    sync.Mutex
	asked [3]uint8
	// downgrade describes the last answer refused; "" when none was.
	downgrade string
}

// Dial implements go-ipmi's proxy dialer.
func (g *suiteGuard) Dial(network, addr string) (net.Conn, error) {
	c, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, g: g}, nil
}

func (g *suiteGuard) refused() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.downgrade
}

type guardedConn struct {
	net.Conn
	g *suiteGuard
}

// Write notes the algorithms an Open Session Request asks for. go-ipmi
// writes each datagram whole.
func (c *guardedConn) Write(b []byte) (int, error) {
	if payload, kind := setupPayloadOf(b); kind == types.PayloadTypeRmcpOpenSessionRequest {
		var req rmcpplus.OpenSessionRequest
		if req.Unpack(payload) == nil {
			c.g.mu.Lock()
			c.g.asked = [3]uint8{req.AuthAlg, req.IntegrityAlg, req.CryptAlg}
			c.g.mu.Unlock()
		}
	}
	return c.Conn.Write(b)
}

// Read fails an Open Session Response that names other algorithms than
// the request. A refusal (a status code) passes: go-ipmi reports it.
func (c *guardedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		return n, err
	}
	payload, kind := setupPayloadOf(b[:n])
	if kind != types.PayloadTypeRmcpOpenSessionResponse {
		return n, nil
	}
	var res rmcpplus.OpenSessionResponse
	if res.Unpack(payload) != nil || res.RmcpStatusCode != types.RmcpStatusCodeNoErrors {
		return n, nil
	}
	answered := [3]uint8{res.AuthAlg, res.IntegrityAlg, res.CryptAlg}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if answered == c.g.asked {
		return n, nil
	}
	c.g.downgrade = fmt.Sprintf("asked for cipher suite %s, the BMC answered with the algorithms of %s",
		suiteName(c.g.asked), suiteName(answered))
	return 0, errDowngrade
}

// setupPayloadOf returns the payload of an RMCP+ message and its type: 0
// for anything else. The RMCP header (4 bytes) and the session header
// (auth type 06h, payload type, session ID, sequence, length: 12 bytes)
// come first; session-setup payloads are never encrypted.
func setupPayloadOf(msg []byte) ([]byte, types.PayloadType) {
	if len(msg) < 16 || msg[4] != byte(types.AuthTypeRMCPPlus) {
		return nil, 0
	}
	return msg[16:], types.PayloadType(msg[5] & 0x3f)
}

// suiteName names a suite by its algorithms: its ID when the IPMI
// specification defines one with them.
func suiteName(algs [3]uint8) string {
	for id := types.CipherSuiteID(0); id <= types.CipherSuiteID(19); id++ {
		a, i, c, ok := types.GetCipherSuiteAlgorithms(id)
		if ok && [3]uint8{uint8(a), uint8(i), uint8(c)} == algs {
			if id == types.CipherSuiteID0 {
				return "0 (no authentication, integrity or encryption)"
			}
			return fmt.Sprintf("%d", id)
		}
	}
	return fmt.Sprintf("of authentication %d, integrity %d and encryption %d", algs[0], algs[1], algs[2]) //nolint:gosec // G602: algs is a [3]uint8
}
