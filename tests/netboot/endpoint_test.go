package netboot

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint/claimstest"
	"github.com/harvester/harvester-equinix-addon/tests/vmrig"
)

const (
	// version is the release the claims install; the endpoint's mirror
	// holds a kernel and initrd for it.
	version = "v1.4.1"
	// mirrorPath is where the endpoint's listener serves the mirror.
	mirrorPath = "/harvester"
	// endpointURL is the endpoint as the page names it.
	endpointURL = "http://" + pageEndpoint + ":" + pagePort
	joinToken   = "K10netboot-join-token::server:0123456789abcdef"
)

// endpointKey is the endpoint's nonce key.
var endpointKey = bytes.Repeat([]byte{0x38}, bootendpoint.KeySize)

// nonceOf is the nonce of the claim of that Instance UID.
func nonceOf(id string) string { return bootendpoint.Nonce(endpointKey, id) }

// request is one HTTP request a machine made of the endpoint.
type request struct {
	path, rawQuery string
	status         int
}

// endpoint is the addon's boot endpoint at the page's address in the
// management network's namespace, with the claims of the test's machines
// and a mirror of the release's kernel and initrd (a vmrig.HaltingKernel,
// which prints the command line it was given on the serial console).
type endpoint struct {
	claims *claimstest.Claims

	mu   sync.Mutex
	reqs []request
}

func serveEndpoint(t *testing.T, l *lan) *endpoint {
	t.Helper()
	e := &endpoint{claims: claimstest.New(claimstest.Join{ServerURL: "192.168.10.10", Token: joinToken,
		InstallDevice: "/dev/sda", PasswordHash: "$6$netboot$" + strings.Repeat("a", 86)})}
	kernel, initrd := vmrig.HaltingKernel(1<<20), make([]byte, 512<<10)
	mux := http.NewServeMux()
	mux.Handle("/boot/", bootendpoint.NewHandler(endpointKey, e.claims, bootendpoint.WithArtifactsMirror(endpointURL+mirrorPath)))
	files := mirrorPath + "/" + version + "/harvester-" + version
	mux.HandleFunc("GET "+files+"-vmlinuz-amd64", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(kernel) })
	mux.HandleFunc("GET "+files+"-initrd-amd64", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(initrd) })

	ln, err := l.listen(net.JoinHostPort(pageEndpoint, pagePort))
	require.NoError(t, err)
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		mux.ServeHTTP(sw, r)
		e.mu.Lock()
		e.reqs = append(e.reqs, request{path: r.URL.Path, rawQuery: r.URL.RawQuery, status: sw.status})
		e.mu.Unlock()
	})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the endpoint stopped: %v", err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return e
}

// claim opens a claim of the machine of that MAC and SMBIOS UUID, as a
// pool's network boot does.
func (e *endpoint) claim(id, mac, uuid string) {
	e.claims.Add(claimstest.Claim{Claim: bootendpoint.Claim{ID: id, Instance: "netboot-" + id[:8], Server: "rack-nb-" + id[:4],
		MAC: mac, SystemUUID: uuid, Version: version}})
}

func (e *endpoint) requests() []request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]request(nil), e.reqs...)
}

// served reports whether the endpoint answered path with 200.
func (e *endpoint) served(path string) bool {
	for _, r := range e.requests() {
		if r.path == path && r.status == http.StatusOK {
			return true
		}
	}
	return false
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}
