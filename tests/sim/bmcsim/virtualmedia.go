package bmcsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// VirtualMediaAt says where a BMC lists its virtual media, if anywhere.
type VirtualMediaAt string

// Where BMCs list virtual media.
const (
	// VirtualMediaNone: no VirtualMedia collection (older or cheaper BMCs).
	VirtualMediaNone VirtualMediaAt = ""
	// VirtualMediaOnSystem: Systems/1/VirtualMedia, where Redfish put it in
	// 2021 (ComputerSystem v1.13) and newer BMCs (iDRAC 9 firmware 6 and
	// later, iLO 6, OpenBMC) list it.
	VirtualMediaOnSystem VirtualMediaAt = "System"
	// VirtualMediaOnManager: Managers/1/VirtualMedia, where iLO 5, older
	// iDRAC firmware, Supermicro and Lenovo XCC list it.
	VirtualMediaOnManager VirtualMediaAt = "Manager"
)

// The simulated BMC's virtual media slots: a CD/DVD drive and, as iDRACs
// have, a removable-disk one that takes only disk images, listed first so
// that a client picking "the first slot" picks the wrong one.
const (
	MediaSlotCD  = "CD"
	MediaSlotUSB = "RemovableDisk"
)

// Media is what a virtual media slot holds.
type Media struct {
	Image          string
	Inserted       bool
	WriteProtected bool
}

// mediaSlots are the slots' state, by ID.
type mediaSlots map[string]*Media

func (b *BMC) mediaCollectionPath() string {
	switch b.opts.VirtualMedia {
	case VirtualMediaOnSystem:
		return systemPath + "/VirtualMedia"
	case VirtualMediaOnManager:
		return managerPath + "/VirtualMedia"
	}
	return ""
}

// MediaIn returns what the slot holds (MediaSlotCD, MediaSlotUSB).
func (b *BMC) MediaIn(slot string) Media {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.media[slot]; m != nil {
		return *m
	}
	return Media{}
}

// SetMedia puts an image in a slot from outside Redfish, as a person at
// the BMC's web page does; "" empties it.
func (b *BMC) SetMedia(slot, image string) {
	b.changeMedia(slot, func() {
		*b.media[slot] = Media{Image: image, Inserted: image != "", WriteProtected: true}
	})
}

// OnMediaChange adds fn to the functions called after a slot's media
// changed, with what it holds now, on the goroutine that changed it and
// outside the BMC's lock: a test host mounts or ejects the image in its
// drive, as the BMC's virtual CD does.
func (b *BMC) OnMediaChange(fn func(slot string, m Media)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mediaHooks = append(b.mediaHooks, fn)
}

// changeMedia runs fn on slot under the lock and tells the hooks when the
// slot's media changed.
func (b *BMC) changeMedia(slot string, fn func()) {
	b.mu.Lock()
	m := b.media[slot]
	if m == nil {
		b.mu.Unlock()
		return
	}
	before := *m
	fn()
	after := *m
	hooks := slices.Clone(b.mediaHooks)
	b.mu.Unlock()
	if before != after {
		for _, h := range hooks {
			h(slot, after)
		}
	}
}

// mediaResource answers a GET of the collection or a slot.
func (b *BMC) mediaResource(path string) (map[string]any, bool) {
	coll := b.mediaCollectionPath()
	if coll == "" {
		return nil, false
	}
	if path == coll {
		return collection(path, "#VirtualMediaCollection.VirtualMediaCollection", "VirtualMediaCollection.VirtualMediaCollection", "Virtual Media Services",
			[]string{coll + "/" + MediaSlotUSB, coll + "/" + MediaSlotCD}), true
	}
	id, ok := strings.CutPrefix(path, coll+"/")
	m := b.media[id]
	if !ok || m == nil {
		return nil, false
	}
	r := resource(path, "#VirtualMedia.v1_6_0.VirtualMedia", "VirtualMedia.VirtualMedia")
	r["Id"], r["Name"] = id, "Virtual "+id
	r["MediaTypes"] = []string{"CD", "DVD"}
	if id == MediaSlotUSB {
		r["MediaTypes"] = []string{"USBStick"}
	}
	r["ConnectedVia"] = "NotConnected"
	r["Image"], r["ImageName"] = nil, nil
	if m.Inserted {
		r["ConnectedVia"], r["Image"], r["ImageName"] = "URI", m.Image, m.Image[strings.LastIndex(m.Image, "/")+1:]
	}
	r["Inserted"], r["WriteProtected"] = m.Inserted, m.WriteProtected
	if !b.opts.VirtualMediaPatchOnly {
		r["Actions"] = map[string]any{
			"#VirtualMedia.InsertMedia": map[string]any{"target": path + "/Actions/VirtualMedia.InsertMedia"},
			"#VirtualMedia.EjectMedia":  map[string]any{"target": path + "/Actions/VirtualMedia.EjectMedia"},
		}
	}
	return r, true
}

// mediaSlotOf returns the slot a path (or an action under it) names.
func (b *BMC) mediaSlotOf(path string) (string, string, bool) {
	coll := b.mediaCollectionPath()
	if coll == "" {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(path, coll+"/")
	if !ok {
		return "", "", false
	}
	id, action, _ := strings.Cut(rest, "/")
	if b.media[id] == nil {
		return "", "", false
	}
	return id, action, true
}

// mediaAction runs InsertMedia or EjectMedia; false when path is neither.
func (b *BMC) mediaAction(w http.ResponseWriter, r *http.Request, path string) bool {
	b.mu.Lock()
	id, action, ok := b.mediaSlotOf(path)
	b.mu.Unlock()
	if !ok || b.opts.VirtualMediaPatchOnly {
		return false
	}
	switch action {
	case "Actions/VirtualMedia.InsertMedia":
		var req struct {
			Image          string
			Inserted       *bool
			WriteProtected *bool
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.")
			return true
		}
		b.changeMedia(id, func() { b.insertLocked(w, id, req.Image, req.Inserted, req.WriteProtected) })
	case "Actions/VirtualMedia.EjectMedia":
		b.changeMedia(id, func() {
			if !b.media[id].Inserted {
				// As iDRACs answer an eject of an empty drive.
				writeError(w, http.StatusBadRequest, "VRM0009", "Virtual Media is detached or Virtual Media devices are already in use.")
				return
			}
			*b.media[id] = Media{}
			w.WriteHeader(http.StatusNoContent)
		})
	default:
		return false
	}
	return true
}

// insertLocked inserts an image, refusing what BMCs refuse: a second
// image over one already inserted (the specification asks services to),
// a URL that is not http(s), and a disk image for the CD drive.
func (b *BMC) insertLocked(w http.ResponseWriter, id, image string, inserted, writeProtected *bool) {
	m := b.media[id]
	if m.Inserted {
		writeError(w, http.StatusConflict, "ResourceInUse", "The change to the requested resource failed because the resource is in use or in transition: eject the inserted media first.")
		return
	}
	u, err := url.Parse(image)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		writeError(w, http.StatusBadRequest, "ActionParameterValueFormatError", fmt.Sprintf("The value %q for the parameter Image in the action InsertMedia is of a different format than the parameter can accept.", image))
		return
	}
	if id == MediaSlotCD && !strings.HasSuffix(strings.ToLower(u.Path), ".iso") && b.opts.VirtualMediaISOSuffix {
		// iLO and some Supermicro firmware judge the image by its name.
		writeError(w, http.StatusBadRequest, "ActionParameterValueFormatError", fmt.Sprintf("The image %q is not an ISO image (a name ending in .iso).", image))
		return
	}
	if inserted != nil && !*inserted {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	*m = Media{Image: image, Inserted: true, WriteProtected: writeProtected == nil || *writeProtected}
	w.WriteHeader(http.StatusNoContent)
}

// patchMedia applies a PATCH of a slot: Image and Inserted, the way BMCs
// without the actions (Lenovo XCC, older Supermicro) insert and eject.
func (b *BMC) patchMedia(w http.ResponseWriter, r *http.Request, id string) {
	var req struct {
		Image          *string
		Inserted       *bool
		WriteProtected *bool
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.")
		return
	}
	b.changeMedia(id, func() {
		if req.Inserted != nil && !*req.Inserted || req.Image != nil && *req.Image == "" {
			*b.media[id] = Media{}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if req.Image == nil {
			writeError(w, http.StatusBadRequest, "PropertyMissing", "The property Image is a required property and must be included in the request.")
			return
		}
		b.insertLocked(w, id, *req.Image, req.Inserted, req.WriteProtected)
	})
}

// MediaSlotPath is the Redfish path of a slot (MediaSlotCD,
// MediaSlotUSB), "" when the BMC lists no virtual media: a fault's
// PathPrefix for the slot's actions.
func (b *BMC) MediaSlotPath(slot string) string {
	coll := b.mediaCollectionPath()
	if coll == "" {
		return ""
	}
	return coll + "/" + slot
}
