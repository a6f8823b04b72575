package bootendpoint

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Claim is an open claim of an owned server: everything the endpoint
// serves is derived from it.
type Claim struct {
	// ID is the claiming Instance's UID; the claim's nonce is derived from
	// it (never stored).
	ID string
	// Instance is the Instance's name (for Events and logs; never the nonce).
	Instance string
	// Server is the Inventory's name.
	Server string
	// MAC is the server's management MAC, canonical lower-case aa:bb:...
	MAC string
	// SystemUUID is the SMBIOS UUID the BMC reported, "" when it gave none
	// (then only the MAC is checked).
	SystemUUID string
	// Arch is "amd64" or "arm64" ("" means amd64).
	Arch string
	// Version is the Harvester version to install.
	Version string
	// BootMode is the pool's spec.bootMode ("" = the installer reads the
	// management interface from the configuration).
	BootMode string
	// Bond is the pool's bond options, may be nil.
	Bond map[string]string
	// Static is the server's static management address, its gateway and
	// first name server, on a network without DHCP (nil: DHCP): the boot
	// image's script and the installer's live system configure it.
	Static *bootmedia.StaticAddress
}

// Claims is what the controller side implements: open claims looked up
// from its caches.
type Claims interface {
	// Open returns the open claim of the server whose management MAC is
	// mac (canonical form), if any. A claim is open from the network boot
	// the Instance asked for (its intent stored) until its Node has joined
	// (or the claim ends).
	Open(mac string) (Claim, bool)
	// InstallConfig renders the claim's Harvester install configuration.
	// Called only for a request that passed every check (MAC, UUID,
	// nonce, claim open).
	InstallConfig(ctx context.Context, c Claim) ([]byte, error)
	// Refused is told of every refused request that named a MAC; reason
	// is one of the Reason constants of the API that this package
	// documents. The endpoint counts refusals itself.
	Refused(mac, reason string)
	// Served is told of every file served under an open claim (FileScript,
	// FileConfig), so that the claim's Instance shows each step of the
	// boot. It must not block the answer for long.
	Served(c Claim, file string)
	// OtherNIC returns the open claim of the server one of whose other
	// NICs (not its management NIC) has the MAC mac, if any: a server that
	// boots from the network on the wrong port.
	OtherNIC(mac string) (Claim, bool)
}

// The files the endpoint serves under a claim, as Served and the
// served-files metric name them.
const (
	// FileScript is the installer script iPXE chains to.
	FileScript = "script"
	// FileConfig is the install configuration the installer reads.
	FileConfig = "config"
)

// Paths the handler serves.
const (
	// ChainPath is the fixed URL a DHCP server hands iPXE clients, with
	// ChainQuery appended.
	ChainPath = "/boot/ipxe"
	// ChainQuery is the query iPXE fills in.
	ChainQuery = "?mac=${mac}&uuid=${uuid}"
	configName = "config.yaml"
)

// Option changes the handler.
type Option func(*handler)

// WithArtifactsMirror makes the installer boot the release's files from
// mirror (see harvester.ArtifactsFrom); empty keeps the official locations.
func WithArtifactsMirror(mirror string) Option { return func(h *handler) { h.mirror = mirror } }

// WithBaseURL is the URL the installer reaches the endpoint at, for the
// configuration URL in the script; without it the script names the host
// the request came to, over http.
func WithBaseURL(base string) Option {
	return func(h *handler) { h.base = strings.TrimSuffix(base, "/") }
}

// WithConsole is the kernel's console= for the installer (default
// harvester.DefaultServerConsole).
func WithConsole(console string) Option { return func(h *handler) { h.console = console } }

// WithLog is where refusals are logged (by MAC and reason only), at
// debug level.
func WithLog(log logrus.FieldLogger) Option { return func(h *handler) { h.log = log } }

type handler struct {
	key     []byte
	claims  Claims
	mirror  string
	base    string
	console string
	log     logrus.FieldLogger
	// media are the claims' boot images (WithBootMedia), nil for none.
	media *mediaImages
}

// NewHandler serves the boot endpoint. Mount it at the root of its
// listener: it answers ChainPath and /boot/<nonce>/config.yaml, and 404
// to everything else.
func NewHandler(key []byte, claims Claims, opts ...Option) http.Handler {
	h := &handler{key: key, claims: claims, log: logrus.WithField("component", "boot-endpoint")}
	for _, o := range opts {
		o(h)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ChainPath, h.serveScript)
	mux.HandleFunc("GET /boot/{nonce}/"+configName, h.serveConfig)
	mux.HandleFunc("GET /boot/{nonce}/"+mediaName, h.serveMedia)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { h.refuse(w, r, "", equinixv1.ReasonBootUnknownPath) })
	return mux
}

// serveScript answers the chain request: the installer script of the
// open claim of that MAC, if the UUID (where the claim has one) agrees.
func (h *handler) serveScript(w http.ResponseWriter, r *http.Request) {
	c, ok := h.claim(w, r)
	if !ok {
		return
	}
	if c.SystemUUID != "" && !sameUUID(c.SystemUUID, r.URL.Query().Get("uuid")) {
		h.refuse(w, r, c.MAC, equinixv1.ReasonBootUUIDMismatch)
		return
	}
	script, err := harvester.ServerInstallerScript(harvester.ServerScript{
		Mirror: h.mirror, Version: c.Version, Arch: c.Arch, Console: h.console,
		ConfigURL: h.baseURL(r) + "/boot/" + Nonce(h.key, c.ID) + "/" + configName + "?mac=" + c.MAC,
		BootMode:  c.BootMode, MAC: c.MAC, BondOptions: c.Bond, Static: installerStatic(c.Static),
	})
	if err != nil {
		// The claim cannot be installed as it stands (its release is not
		// known any more): the server gets nothing to boot.
		h.refuse(w, r, c.MAC, equinixv1.ReasonBootScriptFailed)
		return
	}
	h.write(w, "text/plain; charset=utf-8", []byte(script), FileScript)
	if h.media != nil {
		h.media.booted(c.ID)
	}
	h.claims.Served(c, FileScript)
}

// serveConfig answers the installer: the configuration of the open claim
// of that MAC, if the nonce is that claim's.
func (h *handler) serveConfig(w http.ResponseWriter, r *http.Request) {
	c, ok := h.claim(w, r)
	if !ok {
		return
	}
	if !nonceMatches(h.key, c.ID, r.PathValue("nonce")) {
		h.refuse(w, r, c.MAC, equinixv1.ReasonBootNonceMismatch)
		return
	}
	cfg, err := h.claims.InstallConfig(r.Context(), c)
	if err != nil {
		// Nothing is refused: the configuration cannot be built right now
		// (a Secret not read yet); the installer may ask again.
		h.log.Debugf("install configuration of %s (server %s) failed: %v", c.Instance, c.Server, err)
		metrics.BootRefused.WithLabelValues(equinixv1.ReasonBootConfigFailed).Inc()
		http.Error(w, "install configuration unavailable", http.StatusServiceUnavailable)
		return
	}
	h.write(w, "application/yaml", cfg, FileConfig)
	h.claims.Served(c, FileConfig)
}

// claim finds the open claim of the request's MAC, or refuses it.
func (h *handler) claim(w http.ResponseWriter, r *http.Request) (Claim, bool) {
	mac, ok := normalMAC(r.URL.Query().Get("mac"))
	if !ok {
		h.refuse(w, r, "", equinixv1.ReasonBootInvalidMAC)
		return Claim{}, false
	}
	c, ok := h.claims.Open(mac)
	if ok && c.ID != "" && c.MAC == mac {
		return c, true
	}
	if other, ok := h.claims.OtherNIC(mac); ok {
		// Said at info level and in the answer: without it a server that
		// boots on the wrong port waits for its installer with no trace of
		// why.
		h.log.Infof("a boot request from %s named MAC %s, another NIC of server %s (Instance %s), whose management NIC is %s: "+
			"the server boots from the network on the wrong port, or its Inventory's managementInterfaceMacAddress is wrong",
			r.RemoteAddr, mac, other.Server, other.Instance, other.MAC)
		metrics.BootRefused.WithLabelValues(equinixv1.ReasonBootOtherNIC).Inc()
		h.claims.Refused(mac, equinixv1.ReasonBootOtherNIC)
		http.Error(w, "this MAC is not the management NIC of its server: boot it from the NIC its Inventory names", http.StatusNotFound)
		return Claim{}, false
	}
	h.refuse(w, r, mac, equinixv1.ReasonBootNoOpenClaim)
	return Claim{}, false
}

// refuse answers 404, counts the refusal and tells Claims of it when the
// request named a MAC. The URL is not logged: it may hold a nonce.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, mac, reason string) {
	metrics.BootRefused.WithLabelValues(reason).Inc()
	if mac != "" {
		h.claims.Refused(mac, reason)
		h.log.Debugf("refused a boot request of MAC %s from %s: %s", mac, r.RemoteAddr, reason)
	}
	http.NotFound(w, r)
}

func (h *handler) write(w http.ResponseWriter, contentType string, body []byte, file string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Neither answer may be kept by a cache between the server and the
	// endpoint: both are the claim's only.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	metrics.BootServed.WithLabelValues(file).Inc()
	// A failed write means the server went away mid-download; it boots
	// again, and there is nobody to report the error to.
	_, _ = w.Write(body)
	// The whole answer goes out now: what the handler does after it (the
	// step written into the Instance's status, which may wait for the
	// client-side limit of apiserver requests or meet a conflict) must
	// not hold the server's boot.
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (h *handler) baseURL(r *http.Request) string {
	if h.base != "" {
		return h.base
	}
	return "http://" + r.Host
}

// installerStatic is the claim's static address as the installer's live
// system takes it (nil for DHCP): the same address, gateway and name
// server as the boot image's.
func installerStatic(s *bootmedia.StaticAddress) *harvester.StaticAddress {
	if s == nil {
		return nil
	}
	out := &harvester.StaticAddress{Address: s.Address, Gateway: s.Gateway}
	if s.DNS.IsValid() {
		out.Nameservers = []netip.Addr{s.DNS}
	}
	return out
}
