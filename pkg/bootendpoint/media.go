package bootendpoint

import (
	"errors"
	"net/http"
	"os"
	"sync"
	"time"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// FileMedia is the claim's boot image, which a BMC mounts as virtual
// media, as Served and the served-files metric name it.
const FileMedia = "media"

const mediaName = "media.iso"

// The images live in files of the process's temporary folder, which the
// chart gives a bounded volume: at most MaxMediaImages are kept (1.3 MB
// each). A BMC reads its virtual media in ranges for as long as it is
// mounted, and every range must come from the same image (a rebuilt one
// differs in its time stamps), so an image is kept while it may be read:
// until its claim closed or the claim's installer script was served (iPXE
// then runs from memory and reads the medium no more), else until it has
// been idle for mediaBusy. A claim that finds every place taken by such an
// image is answered 503 and its BMC asks again; the owned pools pace their
// boots so that it does not come to that (MaxMediaBoots). One idle for
// mediaIdle goes at the next request; a claim that closed is refused
// before its image is read.
const (
	// MaxMediaImages is how many boot images the endpoint keeps at once.
	MaxMediaImages = 32
	// MaxMediaBoots is how many servers the owned pools let boot from a
	// boot image at once: half the images kept, so that starts the
	// caches do not show yet still find a place.
	MaxMediaBoots = MaxMediaImages / 2
	mediaBusy     = time.Minute
	mediaIdle     = 30 * time.Minute
)

// errMediaBusy says every place for an image is taken by one being read.
var errMediaBusy = errors.New("every boot image place is in use")

// MediaPath is the path, query included, at which the BMC of claim c
// reads its boot image: it carries the claim's nonce, so only what was
// told the URL (the BMC) can read it, and it dies with the claim.
func MediaPath(key []byte, c Claim) string {
	return "/boot/" + Nonce(key, c.ID) + "/" + mediaName + "?mac=" + c.MAC
}

// WithBootMedia serves each open claim's boot image (package bootmedia)
// at MediaPath, built from loaders in files under dir; without it that
// path is refused as unknown.
func WithBootMedia(loaders *bootmedia.Loaders, dir string) Option {
	return func(h *handler) {
		h.media = &mediaImages{loaders: loaders, dir: dir, images: map[string]*mediaImage{}, now: time.Now}
	}
}

// mediaImages are the claims' built images, by claim ID.
type mediaImages struct {
	loaders *bootmedia.Loaders
	dir     string
	now     func() time.Time

	mu     sync.Mutex
	images map[string]*mediaImage
}

type mediaImage struct {
	img  *bootmedia.Image
	used time.Time
	// mac is the claim's; booted is set once its installer script was
	// served.
	mac    string
	booted bool
}

// booted marks claim id's image as read no more: its server's iPXE
// fetched the installer script.
func (m *mediaImages) booted(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.images[id]; ok {
		e.booted = true
	}
}

// image returns claim c's image, built on its first read with chain as
// the URL its script chains to, and drops those idle for mediaIdle. open
// tells whether the claim of an image kept is still open.
func (m *mediaImages) image(c Claim, chain string, open func(id, mac string) bool) (*bootmedia.Image, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for id, e := range m.images {
		if id != c.ID && now.Sub(e.used) > mediaIdle {
			_ = e.img.Remove()
			delete(m.images, id)
		}
	}
	if e, ok := m.images[c.ID]; ok {
		e.used = now
		return e.img, nil
	}
	if len(m.images) >= MaxMediaImages {
		gone := m.readNoMore(now, open)
		if gone == "" {
			return nil, errMediaBusy
		}
		_ = m.images[gone].img.Remove()
		delete(m.images, gone)
	}
	img, err := bootmedia.Build(bootmedia.Spec{Arch: c.Arch, Firmware: mediaFirmware(c.Arch), MAC: c.MAC, Static: c.Static, ChainURL: chain}, m.loaders, m.dir)
	if err != nil {
		return nil, err
	}
	m.images[c.ID] = &mediaImage{img: img, used: now, mac: c.MAC}
	return img, nil
}

// readNoMore is an image whose place may be taken: one of a claim that
// closed or whose server booted, else the one idle the longest past
// mediaBusy; "" for none.
func (m *mediaImages) readNoMore(now time.Time, open func(id, mac string) bool) string {
	oldest := ""
	for id, e := range m.images {
		if e.booted || !open(id, e.mac) {
			return id
		}
		if now.Sub(e.used) > mediaBusy && (oldest == "" || e.used.Before(m.images[oldest].used)) {
			oldest = id
		}
	}
	return oldest
}

// mediaFirmware is what an image boots with: an arm64 server UEFI only,
// any other both ways (the firmware picks the El Torito entry it boots).
func mediaFirmware(arch string) bmc.BootFirmware {
	if a, err := harvester.NormalizeArch(arch); err == nil && a == harvester.ArchARM64 {
		return bmc.BootFirmwareUEFI
	}
	return bmc.BootFirmwareAny
}

// serveMedia answers a BMC reading a claim's boot image: the open claim
// of that MAC, if the nonce is that claim's. Ranges are served, as BMCs
// read virtual media in pieces.
func (h *handler) serveMedia(w http.ResponseWriter, r *http.Request) {
	if h.media == nil {
		h.refuse(w, r, "", equinixv1.ReasonBootUnknownPath)
		return
	}
	c, ok := h.claim(w, r)
	if !ok {
		return
	}
	if !nonceMatches(h.key, c.ID, r.PathValue("nonce")) {
		h.refuse(w, r, c.MAC, equinixv1.ReasonBootNonceMismatch)
		return
	}
	img, err := h.media.image(c, h.baseURL(r)+ChainPath, func(id, mac string) bool {
		open, ok := h.claims.Open(mac)
		return ok && open.ID == id
	})
	if errors.Is(err, errMediaBusy) {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "boot images busy, ask again", http.StatusServiceUnavailable)
		return
	}
	if err != nil {
		// The loaders cannot make this claim's image (none for its
		// architecture): the server is to be booted another way.
		h.log.Infof("boot image of %s (server %s) cannot be built: %v", c.Instance, c.Server, err)
		h.refuse(w, r, c.MAC, equinixv1.ReasonBootScriptFailed)
		return
	}
	f, err := os.Open(img.Path)
	if err != nil {
		metrics.BootRefused.WithLabelValues(equinixv1.ReasonBootScriptFailed).Inc()
		http.Error(w, "boot image unavailable", http.StatusServiceUnavailable)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/x-iso9660-image")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("ETag", `"`+img.SHA256+`"`)
	if r.Header.Get("Range") == "" {
		// Counted and told once per whole read; a BMC's range reads are
		// the same download.
		metrics.BootServed.WithLabelValues(FileMedia).Inc()
		defer h.claims.Served(c, FileMedia)
	}
	http.ServeContent(w, r, mediaName, time.Time{}, f)
}

// ErrNoBootMedia says the loader directory is absent: the endpoint then
// serves no boot images.
var ErrNoBootMedia = errors.New("no boot loaders")

// LoadBootMedia reads the boot loaders in dir for WithBootMedia; a dir
// that does not exist is ErrNoBootMedia (an image built without them),
// one that holds no loader or a wrong one is an error.
func LoadBootMedia(dir string) (*bootmedia.Loaders, error) {
	if dir == "" {
		return nil, ErrNoBootMedia
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoBootMedia
	}
	return bootmedia.LoadLoaders(dir)
}
