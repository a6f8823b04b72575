package bmcdriver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
)

// link is the driver's one session with one BMC, shared by the passes of
// every machine behind that address. Its lock is held while the session is
// opened or closed, so two goroutines never open two sessions to one BMC,
// and a session is closed before another replaces it.
type link struct {
	mu     sync.Mutex
	client bmc.Client
	// creds fingerprints the endpoint the session was opened with: a pass
	// with other credentials closes it and opens its own.
	creds string
	// memo is what the link's sessions learnt of the BMC, handed to the
	// next login and power read.
	memo bmc.Memo

	// users and timer belong to the driver's lock: the passes holding the
	// link now, and the idle logout armed when the last one let go.
	users int
	timer *time.Timer
}

// linkKey names a BMC: one session per address, whoever asks.
func linkKey(ep bmc.Endpoint) string { return string(ep.Protocol) + "://" + ep.Address() }

// fingerprint identifies what a session was opened with. It stays in
// memory, is never printed, and is compared only with another of its kind.
func fingerprint(ep bmc.Endpoint) string {
	h := sha256.New()
	for _, s := range []string{string(ep.Protocol), ep.Address(), ep.Username, string(ep.Password), string(ep.CABundle),
		strconv.FormatBool(ep.InsecureSkipVerify), ep.Timeout.String()} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// acquire takes the BMC's link for a pass.
func (d *Driver) acquire(ep bmc.Endpoint) *link {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := linkKey(ep)
	l := d.links[key]
	if l == nil {
		l = &link{}
		d.links[key] = l
	}
	l.users++
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	return l
}

// release lets go of a pass's link. The session is kept for the idle time
// when keep says another pass comes before then, and logged out otherwise
// (once no other pass holds it).
func (d *Driver) release(l *link, keep bool) {
	d.mu.Lock()
	l.users--
	if l.users > 0 {
		d.mu.Unlock()
		return
	}
	if keep && d.idle > 0 {
		l.timer = time.AfterFunc(d.idle, func() { d.expire(l) })
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.expire(l)
}

// expire logs out a session no pass holds.
func (d *Driver) expire(l *link) {
	d.mu.Lock()
	if l.users > 0 {
		d.mu.Unlock()
		return
	}
	l.timer = nil
	d.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logout()
}

// open returns the link's session, opening it when there is none or it
// was opened with other credentials.
func (l *link) open(ctx context.Context, ep bmc.Endpoint, creds string, dial DialFunc) (bmc.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client != nil && l.creds == creds {
		return l.client, nil
	}
	l.logout()
	ep.Memo = l.memo
	c, err := dial(ctx, ep)
	if err != nil {
		return nil, err
	}
	l.client, l.creds = c, creds
	l.learn(c)
	return c, nil
}

// learn keeps what a client learnt of the BMC.
func (l *link) learn(c bmc.Client) {
	m, ok := c.(bmc.Memoizer)
	if !ok {
		return
	}
	learnt := m.Memo()
	if learnt.SystemPath != "" {
		l.memo.SystemPath = learnt.SystemPath
	}
	if learnt.CipherSuite != 0 {
		l.memo.CipherSuite = learnt.CipherSuite
	}
}

// readPower reads the BMC's power under the link's lock, so that it never
// runs beside a session being opened: on the link's session when one is
// open for these credentials, else with read, which opens none where it
// can.
func (l *link) readPower(ctx context.Context, ep bmc.Endpoint, creds string, read ReadPowerFunc) (bmc.PowerState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client != nil && l.creds == creds {
		return l.client.PowerState(ctx)
	}
	ep.Memo = l.memo
	state, memo, err := read(ctx, ep)
	l.memo = memo
	return state, err
}

// drop logs out the session c when it is still the link's: the BMC refused
// its credentials, so it cannot serve another pass.
func (l *link) drop(c bmc.Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client == c {
		l.logout()
	}
}

func (l *link) logout() {
	if l.client != nil {
		// The BMC expires a session whose logout it missed: nothing to do
		// with a failure here.
		_ = l.client.Close()
		l.client, l.creds = nil, ""
	}
}

// Close logs out of every BMC, as the controller stops.
func (d *Driver) Close() {
	d.mu.Lock()
	links := make([]*link, 0, len(d.links))
	for _, l := range d.links {
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
		links = append(links, l)
	}
	d.mu.Unlock()
	for _, l := range links {
		l.mu.Lock()
		l.logout()
		l.mu.Unlock()
	}
}

// OpenSessions counts the BMCs the driver holds a session with.
func (d *Driver) OpenSessions() int {
	d.mu.Lock()
	links := make([]*link, 0, len(d.links))
	for _, l := range d.links {
		links = append(links, l)
	}
	d.mu.Unlock()
	n := 0
	for _, l := range links {
		l.mu.Lock()
		if l.client != nil {
			n++
		}
		l.mu.Unlock()
	}
	return n
}
