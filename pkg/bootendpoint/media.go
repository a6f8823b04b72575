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
// chart gives a small, bounded volume: at most maxMediaImages are kept
// (1.3 MB each). A BMC reads its virtual media in ranges for as long as it
// is mounted, and every range must come from the same image (a rebuilt
// one differs in its time stamps), so an image read within mediaBusy is
// never dropped for another: a claim that finds every place busy is
// answered 503 and its BMC asks again. One idle for mediaIdle goes at the
// next request; a claim that closed is refused before its image is read.
const (
	maxMediaImages = 8
	mediaBusy      = time.Minute
	mediaIdle      = 30 * time.Minute
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
}

// image returns claim c's image, built on its first read with chain as
// the URL its script chains to, and drops those idle for mediaIdle.
func (m *mediaImages) image(c Claim, chain string) (*bootmedia.Image, error) {
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
	if len(m.images) >= maxMediaImages {
		oldest := ""
		for id, e := range m.images {
			if now.Sub(e.used) > mediaBusy && (oldest == "" || e.used.Before(m.images[oldest].used)) {
				oldest = id
			}
		}
		if oldest == "" {
			return nil, errMediaBusy
		}
		_ = m.images[oldest].img.Remove()
		delete(m.images, oldest)
	}
	img, err := bootmedia.Build(bootmedia.Spec{Arch: c.Arch, Firmware: mediaFirmware(c.Arch), MAC: c.MAC, Static: c.Static, ChainURL: chain}, m.loaders, m.dir)
	if err != nil {
		return nil, err
	}
	m.images[c.ID] = &mediaImage{img: img, used: now}
	return img, nil
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
	img, err := h.media.image(c, h.baseURL(r)+ChainPath)
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
