package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia/bootmediatest"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// Virtual media in the owned world. Some Redfish BMCs, chosen by the seed,
// offer a virtual CD (listed on the system or on the manager, as vendors
// differ) and one may offer UEFI HTTP boot instead: the controller boots
// those servers from the claim's boot image, which the fleet's servers
// read as their BMC does and follow to the boot endpoint, with no PXE.
// The plan adds what goes wrong with virtual media: an InsertMedia carried
// out whose answer is lost, someone else's image put in a server's CD at
// the BMC's own page, an eject the BMC refuses. Invariant 3 covers the
// images served: only to the server's BMC, within a claim of the server
// (an image URL read back from a BMC and replayed after its claim ended,
// with a stray MAC or with a guessed nonce gets nothing). And:
//   - (6) no image of the addon is left in a virtual CD once its pools are
//     gone, and an image someone else put in one is still there: the
//     addon never ejects or replaces media it did not insert (the last
//     server with virtual media holds one from the start: it is never
//     even sent an insert or an eject);
//   - (7) every image the addon inserted went in while its claim was open,
//     at most once per claim (a lost answer is read back, not sent again).
const (
	ownMediaLost    ownedKind = "media-lost-insert"
	ownForeignMedia ownedKind = "media-foreign"
	ownEjectRefused ownedKind = "media-eject-refused"
)

var ownedMediaKinds = []ownedKind{ownMediaLost, ownForeignMedia, ownEjectRefused}

// foreignImage is the image a person puts in a server's virtual CD.
const foreignImage = "http://images.example.lan/firmware-update.iso"

// drawMedia chooses, after the rest of the plan was drawn (so a seed's
// other draws stay as they were), which Redfish servers offer virtual
// media or UEFI HTTP boot, and puts the media faults among the steps.
// Every run has at least two servers with virtual media, the first free
// ones of generation "a" and "b" that are neither IPMI nor set aside, so
// both pools meet it.
func drawMedia(rng *rand.Rand, p *ownedPlan) {
	redfish := func(i int) bool { return !slices.Contains(p.IPMI, i) }
	for _, first := range []int{p.Foreign + p.Foreign%2, firstFreeB(p.Foreign)} {
		for i := first; i < ownedServers; i += 2 {
			// The server set aside is never claimed: one a pool takes.
			if redfish(i) && i != p.SetAside {
				p.Media = append(p.Media, i)
				break
			}
		}
	}
	for i := range ownedServers {
		if redfish(i) && !slices.Contains(p.Media, i) && rng.Intn(2) == 0 {
			p.Media = append(p.Media, i)
		}
	}
	slices.Sort(p.Media)
	p.Media = slices.Compact(p.Media)
	if rng.Intn(2) == 0 {
		for i := p.Foreign; i < ownedServers; i++ {
			if redfish(i) && !slices.Contains(p.Media, i) {
				p.HTTPBoot = i
				break
			}
		}
	}
	for range 2 + rng.Intn(3) {
		// Among the steps after the pools were made.
		at := len(p.Pools) + rng.Intn(len(p.Steps)-len(p.Pools)+1)
		step := ownedStep{Delay: time.Duration(300+rng.Intn(1200)) * time.Millisecond,
			Kind: ownedMediaKinds[rng.Intn(len(ownedMediaKinds))], Pick: p.Media[rng.Intn(len(p.Media))]}
		p.Steps = slices.Insert(p.Steps, at, step)
	}
}

// bmcOptions are the Redfish options of server i: virtual media on the
// system (even) or on the manager (odd), as iDRACs and iLOs differ, or
// UEFI HTTP boot.
func (p ownedPlan) bmcOptions(i int) bmcsim.Options {
	switch {
	case slices.Contains(p.Media, i) && i%2 == 0:
		return bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem}
	case slices.Contains(p.Media, i):
		return bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnManager}
	case i == p.HTTPBoot && i >= 0:
		return bmcsim.Options{HTTPBoot: true}
	}
	return bmcsim.Options{}
}

// bootLoaders writes the loader the boot endpoint builds images with: a
// stand-in UEFI application (the images are read, not run).
func bootLoaders(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, bootmedia.FileEFIAMD64), bootmediatest.EFIApp(bootmediatest.MachineAMD64), 0o600))
	return dir
}

// mediaChange is one change of a virtual CD's content, as the BMC saw it.
type mediaChange struct {
	image string
	at    time.Time
}

// mediaLog follows a BMC's virtual CD.
type mediaLog struct {
	mu      sync.Mutex
	changes []mediaChange
	// foreign is the image the campaign put in, "" for none; fromStart
	// when it was there before the controller started.
	foreign   string
	fromStart bool
}

func (l *mediaLog) record(slot string, m bmcsim.Media) {
	if slot != bmcsim.MediaSlotCD {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	image := ""
	if m.Inserted {
		image = m.Image
	}
	l.changes = append(l.changes, mediaChange{image: image, at: time.Now()})
}

func (l *mediaLog) all() ([]mediaChange, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.changes), l.foreign, l.fromStart
}

// mediaFault makes the virtual CD of s misbehave as the step says.
func (w *ownedWorld) mediaFault(s *ownedServer, kind ownedKind, pick int) string {
	rf, ok := s.bmc.(redfishBMC)
	if !ok || rf.rf.BMC.MediaSlotPath(bmcsim.MediaSlotCD) == "" {
		return s.spec.Name + " has no virtual media: nothing happens"
	}
	slot := rf.rf.BMC.MediaSlotPath(bmcsim.MediaSlotCD)
	switch kind {
	case ownMediaLost:
		rf.rf.BMC.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLostAnswer, Method: http.MethodPost,
			PathPrefix: slot + "/Actions/VirtualMedia.InsertMedia", Count: 1})
		return s.spec.Name + ": the next InsertMedia is carried out and its answer lost"
	case ownForeignMedia:
		if held := rf.rf.BMC.MediaIn(bmcsim.MediaSlotCD); held.Inserted {
			return fmt.Sprintf("%s: its virtual CD holds an image already: left as it is", s.spec.Name)
		}
		rf.media.mu.Lock()
		rf.media.foreign = foreignImage
		rf.media.mu.Unlock()
		rf.rf.BMC.SetMedia(bmcsim.MediaSlotCD, foreignImage)
		return s.spec.Name + ": someone puts " + foreignImage + " in its virtual CD"
	case ownEjectRefused:
		n := 1 + pick%3
		rf.rf.BMC.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultServerError, Method: http.MethodPost,
			PathPrefix: slot + "/Actions/VirtualMedia.EjectMedia", Count: n})
		return fmt.Sprintf("%s: the next %d EjectMedia are refused (500)", s.spec.Name, n)
	}
	return "no such fault"
}

// mediaPath is a boot image's path on the boot endpoint.
var mediaPath = regexp.MustCompile(`^/boot/([^/]+)/media\.iso$`)

// addonImage says whether image is one of the boot endpoint's.
func (w *ownedWorld) addonImage(image string) bool {
	u, err := url.Parse(image)
	return err == nil && u.Host == w.addr && mediaPath.MatchString(u.Path)
}

// stealImage plays someone with a server's BMC credentials: the image URL
// its virtual CD holds is read back while the claim is open, to be
// replayed later.
func (p *prober) stealImage(i int) {
	s := p.w.servers[i%len(p.w.servers)]
	rf, ok := s.bmc.(redfishBMC)
	if !ok {
		return
	}
	uid := p.w.claims.current(s.spec.Name)
	m := rf.rf.BMC.MediaIn(bmcsim.MediaSlotCD)
	if uid == "" || !m.Inserted || !p.w.addonImage(m.Image) || p.w.claims.current(s.spec.Name) != uid {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.images = append(p.images, stolen{url: m.Image, mac: s.spec.MAC, server: s.spec.Name, uid: uid})
}

// replayImage replays one of the image URLs read back from BMCs.
func (p *prober) replayImage(ctx context.Context, i int, stray string) {
	if l, ok := p.pick(&p.images, i); ok {
		p.replay(ctx, l, stray, "boot image", "media.iso")
	}
}

// checkMedia judges invariants 6 and 7 once the pools are gone (3 judges
// the images served).
func (w *ownedWorld) checkMedia(r *run) {
	for _, s := range w.servers {
		rf, ok := s.bmc.(redfishBMC)
		if !ok || rf.media == nil {
			continue
		}
		changes, foreign, fromStart := rf.media.all()
		held := rf.rf.BMC.MediaIn(bmcsim.MediaSlotCD)
		switch {
		case held.Inserted && w.addonImage(held.Image):
			r.violation("owned (6): the virtual CD of server %s still holds the addon's boot image after its pools were deleted", s.spec.Name)
		case foreign != "" && held.Image != foreign:
			r.violation("owned (6): the image someone put in the virtual CD of server %s is gone (it holds %q): the addon never ejects media it did not insert",
				s.spec.Name, held.Image)
		}
		if fromStart {
			// Its CD was never the addon's: not even an insert or eject
			// was to be sent.
			for _, req := range rf.rf.BMC.RequestLog() {
				if strings.HasPrefix(req, "POST ") && (strings.Contains(req, "InsertMedia") || strings.Contains(req, "EjectMedia")) {
					r.violation("owned (6): server %s, whose virtual CD held someone else's image all along, was sent %s", s.spec.Name, req)
				}
			}
		}
		w.checkInserts(r, s, changes)
	}
}

// checkInserts (7): each of the addon's images went into the CD while
// its claim was open, once per claim at most. An image is its claim's by
// its nonce, which the test makes from the boot endpoint's key as the
// controller does.
func (w *ownedWorld) checkInserts(r *run, s *ownedServer, changes []mediaChange) {
	key, err := w.bootKey(r)
	if err != nil {
		r.violation("owned (7): reading the boot endpoint's key: %v", err)
		return
	}
	perClaim := map[string]int{}
	for _, c := range changes {
		if !w.addonImage(c.image) {
			continue
		}
		u, _ := url.Parse(c.image)
		nonce := mediaPath.FindStringSubmatch(u.Path)[1]
		uid := ""
		for _, win := range w.claims.windows(s.spec.Name) {
			if bootendpoint.Nonce(key, win.uid) == nonce {
				uid = win.uid
			}
		}
		switch {
		case uid == "":
			r.violation("owned (7): the virtual CD of server %s got, at %s, a boot image of no claim of that server; its claims: %s",
				s.spec.Name, c.at.Format("15:04:05.000"), describeWindows(w.claims.windows(s.spec.Name)))
		case !w.claims.claimedAround(s.spec.Name, uid, c.at, c.at):
			r.violation("owned (7): the boot image of claim %s went into the virtual CD of server %s at %s, outside that claim; its claims: %s",
				uid, s.spec.Name, c.at.Format("15:04:05.000"), describeWindows(w.claims.windows(s.spec.Name)))
		default:
			if perClaim[uid]++; perClaim[uid] == 2 {
				r.violation("owned (7): the boot image went into the virtual CD of server %s twice during its claim %s", s.spec.Name, uid)
			}
		}
	}
}

// bootKey is the boot endpoint's key, from its Secret.
func (w *ownedWorld) bootKey(r *run) ([]byte, error) {
	sec, err := r.env.Kube.CoreV1().Secrets(framework.Namespace).Get(r.env.Ctx, bootendpoint.KeySecretName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return sec.Data[bootendpoint.KeySecretKey], nil
}

// mediaSummary counts the world's boots from images.
func (w *ownedWorld) mediaSummary() string {
	read, inserts := 0, 0
	for _, a := range w.boots.all() {
		if a.kind == "media" && served(a.status) && a.who != "prober" {
			read++
		}
	}
	for _, s := range w.servers {
		if rf, ok := s.bmc.(redfishBMC); ok && rf.media != nil {
			changes, _, _ := rf.media.all()
			for _, c := range changes {
				if w.addonImage(c.image) {
					inserts++
				}
			}
		}
	}
	return fmt.Sprintf("virtual media on %v, UEFI HTTP on %d: %d images inserted, %d read by their BMC", w.plan.Media, w.plan.HTTPBoot, inserts, read)
}
