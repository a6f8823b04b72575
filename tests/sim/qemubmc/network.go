package qemubmc

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// BootNetwork is the machines' one way out: QEMU forwards the boot
// endpoint's guest address to it (use its Addr as Options.Host), and it
// passes each request on to the controller's boot endpoint, noting when
// each server read its image and fetched its installer script, and the
// script: what a test reads to play the installer, and to time a boot.
type BootNetwork struct {
	// Addr is where it listens (host:port).
	Addr string
	srv  *http.Server

	mu      sync.Mutex
	scripts map[string]Fetched // by MAC: the first script served
	images  map[string]time.Time
}

// Fetched is a file a machine fetched, and when it was answered.
type Fetched struct {
	At   time.Time
	Body string
}

// NewBootNetwork passes requests on to the boot endpoint at endpoint
// (host:port). Close it at the end.
func NewBootNetwork(endpoint string) (*BootNetwork, error) {
	n := &BootNetwork{scripts: map[string]Fetched{}, images: map[string]time.Time{}}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: endpoint})
	proxy.ModifyResponse = n.noteScript
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("boot network: %w", err)
	}
	n.Addr = ln.Addr().String()
	n.srv = &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/media.iso") {
			n.mu.Lock()
			if _, ok := n.images[r.URL.Query().Get("mac")]; !ok {
				n.images[r.URL.Query().Get("mac")] = time.Now()
			}
			n.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = n.srv.Serve(ln) }()
	return n, nil
}

// Close stops passing requests on.
func (n *BootNetwork) Close() error { return n.srv.Close() }

// noteScript keeps the first installer script served to each MAC.
func (n *BootNetwork) noteScript(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/boot/ipxe" {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("script: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	mac := resp.Request.URL.Query().Get("mac")
	n.mu.Lock()
	if _, ok := n.scripts[mac]; !ok {
		n.scripts[mac] = Fetched{At: time.Now(), Body: string(body)}
	}
	n.mu.Unlock()
	return nil
}

// Script is the installer script the server of mac fetched, if it did.
func (n *BootNetwork) Script(mac string) (Fetched, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f, ok := n.scripts[mac]
	return f, ok
}

// ImageRead is when the image of the server of mac was first asked for
// (by its BMC), zero if never.
func (n *BootNetwork) ImageRead(mac string) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.images[mac]
}

// HostURL is a URL naming guest (the boot endpoint as the machines reach
// it, host:port) as the test reaches it.
func (n *BootNetwork) HostURL(raw, guest string) (string, error) {
	o := Options{Host: n.Addr}
	if err := o.parseGuest(guest); err != nil {
		return "", err
	}
	out := o.guestToHost(raw)
	if out == raw {
		return "", fmt.Errorf("%s does not name the boot endpoint's guest address %s", raw, guest)
	}
	return out, nil
}
