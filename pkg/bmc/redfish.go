package bmc

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

type redfishClient struct {
	ep   Endpoint
	http *http.Client
	// rt carries the credentials and keeps a pass's reads; trust judges
	// the BMC's certificate.
	rt    *transport
	trust *trust

	mu sync.Mutex
	// api is gofish's client, without credentials of its own: rt adds
	// them to its requests.
	api *gofish.APIClient
	// sessionsURI is the service root's Sessions link ("" without a
	// session service); session the URI of the session opened.
	sessionsURI string
	session     string
	basicAuth   bool
	systemURI   string
	closed      bool
	// logSources are the log services of hardware events, found on the
	// first LogEntries of the session; nil until then. skippedLogs are the
	// others, with why.
	logSources  []logSource
	skippedLogs []string
}

func newRedfishClient(ep Endpoint) *redfishClient {
	hc, t := newHTTPClient(ep)
	rt := newTransport(hc.Transport)
	hc.Transport = rt
	return &redfishClient{ep: ep, http: hc, rt: rt, trust: t}
}

func dialRedfish(ctx context.Context, ep Endpoint) (*redfishClient, error) {
	c := newRedfishClient(ep)
	// Read the service root without credentials first: it is open to all
	// by specification, and a failure here means the port is not Redfish,
	// which must not be mistaken for a login failure.
	api, err := gofish.ConnectContext(ctx, c.config())
	if err != nil {
		return nil, c.fail(ctx, "Dial", err, stageRoot)
	}
	if api.Service == nil || (api.Service.RedfishVersion == "" && !strings.Contains(api.Service.ODataType, "ServiceRoot")) {
		return nil, newError("Dial", ep, failure.ProtocolMismatch, "the answer at /redfish/v1/ is JSON but not a Redfish service root", nil)
	}
	c.api = api
	if c.sessionsURI, err = sessionsLink(api); err != nil {
		return nil, c.fail(ctx, "Dial", err, stageRoot)
	}
	if err := c.login(ctx); err != nil {
		return nil, err
	}
	if err := c.findSystem(ctx); err != nil {
		c.logout()
		return nil, err
	}
	c.rt.loggedIn()
	return c, nil
}

// newHTTPClient builds the transport: verification on unless the endpoint
// opts out (see trust: the CA bundle added to the system roots, the
// certificates pinned, the first one on first use), no proxy from the
// environment (BMCs sit on management networks, and a proxy would see the
// credentials), and every wait bounded by the endpoint's timeout.
func newHTTPClient(ep Endpoint) (*http.Client, *trust) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if len(ep.CABundle) > 0 {
		pool.AppendCertsFromPEM(ep.CABundle) // Validate proved it parses
	}
	t := newTrust(ep, pool)
	timeout := ep.timeout()
	transport := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       t.tlsConfig(),
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   2,
	}
	return &http.Client{Transport: transport, Timeout: timeout}, t
}

func (c *redfishClient) config() gofish.ClientConfig {
	return gofish.ClientConfig{
		Endpoint:          "https://" + c.ep.Address(),
		HTTPClient:        c.http,
		NoModifyTransport: true,
		ReuseConnections:  true,
	}
}

// sessionsLink reads the service root's Links.Sessions, which gofish
// keeps to itself ("" without a session service). The root was read a
// moment ago: the transport answers from what it kept.
func sessionsLink(api *gofish.APIClient) (string, error) {
	resp, err := api.Get(schemas.DefaultServiceRoot)
	defer schemas.DeferredCleanupHTTPResponse(resp)
	if err != nil {
		return "", err
	}
	var root struct {
		Links struct {
			Sessions struct {
				ID string `json:"@odata.id"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&root); err != nil {
		return "", err
	}
	return root.Links.Sessions.ID, nil
}

// login opens a session. A BMC without a session service (no Sessions
// link, or 404, 405, 501 on the login) gets HTTP basic auth instead,
// checked by reading the Systems collection.
func (c *redfishClient) login(ctx context.Context) error {
	api := c.api.WithContext(ctx)
	if c.sessionsURI != "" {
		auth, err := schemas.CreateSession(api, c.sessionsURI, c.ep.Username, string(c.ep.Password))
		if err == nil {
			c.rt.useToken(auth.Token)
			c.session, c.basicAuth = auth.Session, false
			return nil
		}
		var rfErr *schemas.Error
		if !errors.As(err, &rfErr) || !slices.Contains([]int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented}, rfErr.HTTPReturnedStatusCode) {
			return c.fail(ctx, "Dial", err, stageLogin)
		}
	}
	c.rt.useBasic(c.ep.Username, string(c.ep.Password))
	if _, err := api.Service.Systems(); err != nil {
		c.rt.useToken("")
		return c.fail(ctx, "Dial", err, stageLogin)
	}
	c.basicAuth = true
	return nil
}

// findSystem finds the server's computer system: the one the endpoint
// names, or the only one. A BMC that lists several and none chosen is
// refused, never guessed: the first of a blade chassis's systems is
// another server, which a power command would take down.
func (c *redfishClient) findSystem(ctx context.Context) error {
	systems, err := c.api.WithContext(ctx).Service.Systems()
	if err != nil {
		return c.fail(ctx, "Dial", err, stageSession)
	}
	if len(systems) == 0 {
		return newError("Dial", c.ep, failure.Unsupported, "the Redfish service lists no computer system", nil)
	}
	uri, err := chooseSystem(systems, c.ep.SystemID)
	if err != nil {
		return newError("Dial", c.ep, failure.Invalid, err.Error(), nil)
	}
	c.systemURI = uri
	return nil
}

// chooseSystem is the URI of the system whose Id is id, or of the only
// system when id is empty; otherwise an error naming the systems listed
// (at least one).
func chooseSystem(systems []*schemas.ComputerSystem, id string) (string, error) {
	ids := make([]string, 0, len(systems))
	for _, s := range systems {
		if id != "" && s.ID == id {
			return s.ODataID, nil
		}
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	switch {
	case id != "":
		return "", fmt.Errorf("the BMC lists no computer system %q; it lists %s", id, strings.Join(ids, ", "))
	case len(systems) > 1:
		return "", fmt.Errorf("the BMC lists %d computer systems (%s): set systemID to this server's", len(systems), strings.Join(ids, ", "))
	}
	return systems[0].ODataID, nil
}

// do runs fn with the caller's context. When the BMC dropped the session
// (401 with session auth), it logs in again and runs fn once more: the
// first request was refused before anything happened, so even a power
// command still reaches the BMC only once.
func (c *redfishClient) do(ctx context.Context, op string, fn func(api *gofish.APIClient) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return closedError(op, c.ep)
	}
	err := fn(c.api.WithContext(ctx))
	if err != nil && !c.basicAuth && isStatus(err, http.StatusUnauthorized) {
		// End the refused session in case the BMC still counts it; most
		// BMCs allow only a handful of sessions at a time.
		c.logout()
		if lerr := c.login(ctx); lerr != nil {
			return lerr
		}
		err = fn(c.api.WithContext(ctx))
	}
	if err != nil {
		return c.fail(ctx, op, err, stageSession)
	}
	return nil
}

func isStatus(err error, code int) bool {
	var rfErr *schemas.Error
	return errors.As(err, &rfErr) && rfErr.HTTPReturnedStatusCode == code
}

// fail classifies err. A refused connection gets one more look: when the
// same port answers an RMCP ping, the user pointed Redfish at an IPMI port.
func (c *redfishClient) fail(ctx context.Context, op string, err error, st stage) error {
	var be *failure.Error
	if errors.As(err, &be) {
		return be
	}
	if class, msg, ok := ctxErr(ctx); ok {
		return newError(op, c.ep, class, msg, err)
	}
	class, msg := classifyRedfish(err, st)
	if class == failure.Unreachable && st == stageRoot && answersRMCP(ctx, c.ep) {
		class, msg = failure.ProtocolMismatch, fmt.Sprintf("port %d answers IPMI (RMCP over UDP), not HTTPS: set the protocol to %q", c.ep.port(), ProtocolIPMI)
	}
	return newError(op, c.ep, class, msg, err)
}

func (c *redfishClient) system(api *gofish.APIClient) (*schemas.ComputerSystem, error) {
	return schemas.GetObject[schemas.ComputerSystem](api, c.systemURI)
}

func (c *redfishClient) PowerState(ctx context.Context) (PowerState, error) {
	state := PowerUnknown
	err := c.do(ctx, "PowerState", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		state = redfishPowerState(string(sys.PowerState))
		return nil
	})
	return state, err
}

// redfishPowerState reads a system's PowerState: on, off, or unknown for
// anything in between.
func redfishPowerState(s string) PowerState {
	switch schemas.PowerState(s) {
	case schemas.OnPowerState:
		return PowerOn
	case schemas.OffPowerState:
		return PowerOff
	}
	return PowerUnknown
}

func (c *redfishClient) Power(ctx context.Context, action PowerAction) error {
	if !action.valid() {
		return invalidAction("Power", c.ep, action)
	}
	return c.do(ctx, "Power", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		allowed, err := sys.GetSupportedResetTypes()
		if err != nil {
			return err
		}
		reset, ok := resetTypeFor(action, allowed)
		if !ok {
			return newError("Power", c.ep, failure.Unsupported, fmt.Sprintf("the BMC offers no reset type for %q (allowed: %v)", string(action), allowed), nil)
		}
		_, err = sys.Reset(reset)
		return err
	})
}

// resetTypeFor maps an action to a ResetType the BMC lists. An empty list
// means the BMC did not say, and the common choice is sent. Reboot prefers
// PowerCycle, which also starts a host that is off, over ForceRestart,
// which many BMCs refuse then.
func resetTypeFor(a PowerAction, allowed []schemas.ResetType) (schemas.ResetType, bool) {
	prefs := map[PowerAction][]schemas.ResetType{
		PowerActionOn:     {schemas.OnResetType, schemas.ForceOnResetType},
		PowerActionOff:    {schemas.ForceOffResetType},
		PowerActionReboot: {schemas.PowerCycleResetType, schemas.ForceRestartResetType},
	}[a]
	if len(allowed) == 0 {
		if a == PowerActionReboot {
			return schemas.ForceRestartResetType, true
		}
		return prefs[0], true
	}
	for _, p := range prefs {
		if slices.Contains(allowed, p) {
			return p, true
		}
	}
	return "", false
}

func (c *redfishClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.logout()
	return nil
}

// logout deletes the session, bounded by the timeout; a BMC that does not
// answer will expire the session by itself.
func (c *redfishClient) logout() {
	if c.api == nil {
		return
	}
	if c.session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), c.ep.timeout())
		defer cancel()
		// A BMC that missed the logout expires the session on its own.
		_ = schemas.DeleteSession(c.api.WithContext(ctx), c.session)
		c.session = ""
	}
	c.rt.useToken("")
	c.http.CloseIdleConnections()
}

// PeerCertificate is the certificate of the BMC's last TLS handshake.
func (c *redfishClient) PeerCertificate() (Certificate, bool) { return c.trust.peer() }

// NewPass keeps the reads of a pass of the caller from now on, so that a
// resource it asks for twice is read once; the first pass after the login
// also gets the login's reads, later ones read the BMC anew.
func (c *redfishClient) NewPass() { c.rt.newPass() }

// Memo is what the session learnt that makes a later read cheaper.
func (c *redfishClient) Memo() Memo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Memo{SystemPath: c.systemURI}
}
