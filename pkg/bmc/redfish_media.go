package bmc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

var _ MediaClient = (*redfishClient)(nil)

// Capabilities reads the system's Boot and finds a CD/DVD slot among the
// virtual media of the system (where Redfish lists them since 2021) and,
// failing that, of the managers that manage it (where iLO 5, older iDRAC
// firmware, Supermicro and Lenovo XCC list them).
func (c *redfishClient) Capabilities(ctx context.Context) (Capabilities, error) {
	var caps Capabilities
	err := c.do(ctx, "Capabilities", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		caps = capabilitiesOf(sys)
		slot, err := c.cdSlot(sys)
		if err != nil {
			return err
		}
		if slot != nil && allows(caps.BootTargets, schemas.CdBootSource) {
			caps.VirtualMedia, caps.MediaSlot = true, slot.ODataID
		}
		return nil
	})
	return caps, err
}

// capabilitiesOf reads what the system's Boot allows.
func capabilitiesOf(sys *schemas.ComputerSystem) Capabilities {
	var caps Capabilities
	for _, t := range sys.Boot.AllowableBootSourceOverrideTargetValues {
		caps.BootTargets = append(caps.BootTargets, string(t))
	}
	caps.PXE = allows(caps.BootTargets, schemas.PxeBootSource)
	caps.UEFIHTTP = allows(caps.BootTargets, schemas.UefiHTTPBootSource) && hasHTTPBootURI(sys)
	return caps
}

// allows says whether a listed target is allowed; a BMC that lists none
// is taken at its word when it answers the boot call.
func allows(targets []string, t schemas.BootSource) bool {
	return len(targets) == 0 || slices.Contains(targets, string(t))
}

// hasHTTPBootURI says whether the system's Boot has the HttpBootUri
// property at all (an empty value is a property with nothing set).
func hasHTTPBootURI(sys *schemas.ComputerSystem) bool {
	var raw struct {
		Boot map[string]json.RawMessage
	}
	_ = json.Unmarshal(sys.RawData, &raw) // gofish parsed the same bytes
	_, ok := raw.Boot["HttpBootUri"]
	return ok
}

// cdSlot is the first virtual media slot that takes a CD or DVD image;
// nil when the BMC has none. A slot for disk images only (iDRAC's
// RemovableDisk) is passed over.
func (c *redfishClient) cdSlot(sys *schemas.ComputerSystem) (*schemas.VirtualMedia, error) {
	slots, err := optional(sys.VirtualMedia())
	if err != nil {
		return nil, err
	}
	if len(slots) == 0 {
		managers, err := optional(sys.ManagedBy())
		if err != nil {
			return nil, err
		}
		for _, m := range managers {
			more, err := optional(m.VirtualMedia())
			if err != nil {
				return nil, err
			}
			slots = append(slots, more...)
		}
	}
	for _, s := range slots {
		if slices.Contains(s.MediaTypes, schemas.CDVirtualMediaType) || slices.Contains(s.MediaTypes, schemas.DVDVirtualMediaType) {
			return s, nil
		}
	}
	return nil, nil
}

// mediaSlot is the CD/DVD slot, or Unsupported.
func (c *redfishClient) mediaSlot(op string, api *gofish.APIClient) (*schemas.VirtualMedia, error) {
	sys, err := c.system(api)
	if err != nil {
		return nil, err
	}
	slot, err := c.cdSlot(sys)
	if err != nil {
		return nil, err
	}
	if slot == nil {
		return nil, newError(op, c.ep, failure.Unsupported, "the BMC offers no virtual media slot for a CD or DVD image; boot the server from the network instead", nil)
	}
	return slot, nil
}

func mediaOf(slot *schemas.VirtualMedia) Media {
	return Media{Image: slot.Image, Inserted: (slot.Inserted != nil && *slot.Inserted) || (slot.Inserted == nil && slot.Image != "")}
}

// Media reads the CD/DVD slot.
func (c *redfishClient) Media(ctx context.Context) (Media, error) {
	var m Media
	err := c.do(ctx, "Media", func(api *gofish.APIClient) error {
		slot, err := c.mediaSlot("Media", api)
		if err != nil {
			return err
		}
		m = mediaOf(slot)
		return nil
	})
	return m, err
}

// InsertMedia reads the slot first: the same image is done, another one
// is someone else's. It sends the action once (gofish PATCHes the slot
// where the BMC offers no InsertMedia action) and never retries it.
func (c *redfishClient) InsertMedia(ctx context.Context, image string) error {
	if u, err := url.Parse(image); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return newError("InsertMedia", c.ep, failure.Invalid, fmt.Sprintf("image %q is not an http or https URL", image), nil)
	}
	return c.do(ctx, "InsertMedia", func(api *gofish.APIClient) error {
		slot, err := c.mediaSlot("InsertMedia", api)
		if err != nil {
			return err
		}
		if m := mediaOf(slot); m.Inserted {
			if sameImage(m.Image, image) {
				return nil
			}
			return newError("InsertMedia", c.ep, failure.Busy, fmt.Sprintf("the BMC's virtual CD holds another image (%s), which the addon did not insert and leaves alone: eject it at the BMC", m.Image), nil)
		}
		yes := true
		_, err = slot.InsertMedia(&schemas.VirtualMediaInsertMediaParameters{Image: image, Inserted: &yes, WriteProtected: &yes})
		if err != nil && (isStatus(err, http.StatusBadRequest) || isStatus(err, http.StatusMethodNotAllowed) || isStatus(err, http.StatusNotImplemented)) {
			_, msg := classifyRedfish(err, stageSession)
			return newError("InsertMedia", c.ep, failure.Unsupported, "the BMC refused to mount the boot image ("+msg+")", err)
		}
		if err != nil && isStatus(err, http.StatusConflict) {
			_, msg := classifyRedfish(err, stageSession)
			return newError("InsertMedia", c.ep, failure.Busy, "the BMC's virtual CD is in use ("+msg+")", err)
		}
		return err
	})
}

// EjectMedia ejects only image: an eject of what someone else mounted
// (an operator installing by hand) would break their work.
func (c *redfishClient) EjectMedia(ctx context.Context, image string) (bool, error) {
	ejected := false
	err := c.do(ctx, "EjectMedia", func(api *gofish.APIClient) error {
		slot, err := c.mediaSlot("EjectMedia", api)
		if err != nil {
			return err
		}
		if m := mediaOf(slot); !m.Inserted || !sameImage(m.Image, image) {
			return nil
		}
		if _, err := slot.EjectMedia(); err != nil {
			return err
		}
		ejected = true
		return nil
	})
	return ejected, err
}

// BootOnceHTTP patches the override to UefiHttp with the URI (mode UEFI
// where the system has the property) and reads it back.
func (c *redfishClient) BootOnceHTTP(ctx context.Context, uri string) error {
	if u, err := url.Parse(uri); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return newError("BootOnceHTTP", c.ep, failure.Invalid, fmt.Sprintf("boot URI %q is not an http or https URL", uri), nil)
	}
	want := schemas.Boot{BootSourceOverrideTarget: schemas.UefiHTTPBootSource, BootSourceOverrideEnabled: schemas.OnceBootSourceOverrideEnabled, HTTPBootURI: uri}
	err := c.do(ctx, "BootOnceHTTP", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		if caps := capabilitiesOf(sys); !caps.UEFIHTTP {
			return newError("BootOnceHTTP", c.ep, failure.Unsupported, fmt.Sprintf(
				"the system offers no one-time UEFI HTTP boot with a URI (allowed targets: %v, HttpBootUri present: %t)", caps.BootTargets, hasHTTPBootURI(sys)), nil)
		}
		if sys.Boot.BootSourceOverrideMode != "" {
			want.BootSourceOverrideMode = schemas.UEFIBootSourceOverrideMode
		}
		return bootRefused(c.ep, sys.SetBoot(&want))
	})
	if err != nil {
		return err
	}
	return c.do(ctx, "BootOnceHTTP", func(api *gofish.APIClient) error {
		got, pending, err := c.bootNow(api)
		if err != nil {
			return err
		}
		kept := func(b schemas.Boot) bool { return sameOverride(b, want) && b.HTTPBootURI == uri }
		if !kept(got) && !kept(pending) {
			return newError("BootOnceHTTP", c.ep, failure.Unsupported, fmt.Sprintf(
				"the BMC took the UEFI HTTP boot but reads back target %q, enabled %q, URI %q: it does not keep it",
				got.BootSourceOverrideTarget, got.BootSourceOverrideEnabled, got.HTTPBootURI), nil)
		}
		return nil
	})
}
