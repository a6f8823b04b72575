package bmc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// BootOnce patches the system's Boot with the override (target Pxe,
// enabled Once, and the mode where the system reports the property), then
// reads it back. The patch is one request; a read back that disagrees is
// Unsupported, for the BMC took the request and will not act on it.
//
// The mode is sent whenever the system has one, also for BootFirmwareAny
// (its own, sent back): Supermicro BMCs set a mode left out of the patch
// back to their default. BMCs that keep the mode a BIOS setting (HPE iLO 5, Dell's
// 13th-generation iDRAC) refuse a patch that names it, even unchanged,
// with 400; a system already in the mode wanted then gets the patch once
// more without it, and one in the other mode is Unsupported, saying where
// to change it.
func (c *redfishClient) BootOnce(ctx context.Context, dev BootDevice, fw BootFirmware) (BootFirmware, error) {
	if err := checkBoot(c.ep, dev, fw); err != nil {
		return BootFirmwareAny, err
	}
	var want schemas.Boot
	used := BootFirmwareAny
	err := c.do(ctx, "BootOnce", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		var refusal string
		if want, refusal = bootOverride(sys.Boot, dev, fw); refusal != "" {
			return newError("BootOnce", c.ep, failure.Unsupported, refusal, nil)
		}
		used = firmwareOf(want.BootSourceOverrideMode)
		// SetBoot patches the system; a BMC that refuses that and names a
		// settings resource (@Redfish.Settings) gets the patch there,
		// which is how newer iDRACs take it.
		err = sys.SetBoot(&want)
		if err == nil || want.BootSourceOverrideMode == "" || !isStatus(err, http.StatusBadRequest) {
			return bootRefused(c.ep, err)
		}
		// A 400 applied nothing. Without the mode the override boots the
		// system in the mode it has: right only when that is the one wanted.
		if has := sys.Boot.BootSourceOverrideMode; has != want.BootSourceOverrideMode {
			_, msg := classifyRedfish(err, stageSession)
			return newError("BootOnce", c.ep, failure.Unsupported, fmt.Sprintf(
				"the BMC refused boot mode %s (%s) and the server is set to %s: set its boot mode to %s in the server's firmware settings (BIOS boot mode), or ask for %s",
				want.BootSourceOverrideMode, msg, has, want.BootSourceOverrideMode, has), err)
		}
		want.BootSourceOverrideMode = ""
		return bootRefused(c.ep, sys.SetBoot(&want))
	})
	if err != nil {
		return used, err
	}
	// The read back is a request of its own: should the session drop in
	// between, the patch is not sent again with it.
	return used, c.do(ctx, "BootOnce", func(api *gofish.APIClient) error {
		got, pending, err := c.bootNow(api)
		if err != nil {
			return err
		}
		if !sameOverride(got, want) && !sameOverride(pending, want) {
			return newError("BootOnce", c.ep, failure.Unsupported, fmt.Sprintf(
				"the BMC took the boot override but reads back target %q, enabled %q, mode %q: it does not keep a one-time network boot; set the server to boot from the network in its firmware",
				got.BootSourceOverrideTarget, got.BootSourceOverrideEnabled, got.BootSourceOverrideMode), nil)
		}
		return nil
	})
}

// bootOverride builds the patch, or says why this system cannot take it:
// a system that lists the targets it allows and lacks the device's.
func bootOverride(current schemas.Boot, dev BootDevice, fw BootFirmware) (schemas.Boot, string) {
	target := schemas.PxeBootSource
	if dev == BootCD {
		target = schemas.CdBootSource
	}
	if allowed := current.AllowableBootSourceOverrideTargetValues; len(allowed) > 0 && !slices.Contains(allowed, target) {
		if dev == BootCD {
			return schemas.Boot{}, fmt.Sprintf("the system offers no boot override to the CD/DVD drive (allowed targets: %v)", allowed)
		}
		return schemas.Boot{}, fmt.Sprintf("the system offers no network boot override (allowed targets: %v); enable PXE on the management NIC in the server's firmware settings", allowed)
	}
	want := schemas.Boot{BootSourceOverrideTarget: target, BootSourceOverrideEnabled: schemas.OnceBootSourceOverrideEnabled}
	// Only a system that has the property gets it: others refuse the
	// whole patch for a property they do not know.
	switch has := current.BootSourceOverrideMode; {
	case has == "":
	case fw == BootFirmwareUEFI:
		want.BootSourceOverrideMode = schemas.UEFIBootSourceOverrideMode
	case fw == BootFirmwareLegacy:
		want.BootSourceOverrideMode = schemas.LegacyBootSourceOverrideMode
	case has == schemas.UEFIBootSourceOverrideMode || has == schemas.LegacyBootSourceOverrideMode:
		want.BootSourceOverrideMode = has
	}
	return want, ""
}

// firmwareOf names a Redfish boot mode in the package's words.
func firmwareOf(mode schemas.BootSourceOverrideMode) BootFirmware {
	switch mode {
	case schemas.UEFIBootSourceOverrideMode:
		return BootFirmwareUEFI
	case schemas.LegacyBootSourceOverrideMode:
		return BootFirmwareLegacy
	}
	return BootFirmwareAny
}

// bootRefused reads a refused patch: the request is well formed, so a 400
// (a property or value the BMC does not know) or a 405 means this BMC does
// not take a boot override.
func bootRefused(ep Endpoint, err error) error {
	if err == nil {
		return nil
	}
	if isStatus(err, http.StatusBadRequest) || isStatus(err, http.StatusMethodNotAllowed) || isStatus(err, http.StatusNotImplemented) {
		_, msg := classifyRedfish(err, stageSession)
		return newError("BootOnce", ep, failure.Unsupported, "the BMC refused the one-time network boot ("+msg+"); set the server to boot from the network in its firmware", err)
	}
	return err
}

// bootNow reads the system's Boot and, when the system names a settings
// resource, the Boot waiting there for the next reset.
func (c *redfishClient) bootNow(api *gofish.APIClient) (current, pending schemas.Boot, err error) {
	sys, err := c.system(api)
	if err != nil {
		return current, pending, err
	}
	var raw struct {
		Settings struct {
			Object struct {
				ID string `json:"@odata.id"`
			} `json:"SettingsObject"`
		} `json:"@Redfish.Settings"`
	}
	_ = json.Unmarshal(sys.RawData, &raw) // gofish parsed the same bytes
	if id := raw.Settings.Object.ID; id != "" && id != sys.ODataID {
		settings, err := optional(schemas.GetObject[schemas.ComputerSystem](api, id))
		if err != nil {
			return current, pending, err
		}
		if settings != nil {
			pending = settings.Boot
		}
	}
	return sys.Boot, pending, nil
}

func sameOverride(got, want schemas.Boot) bool {
	return got.BootSourceOverrideTarget == want.BootSourceOverrideTarget &&
		got.BootSourceOverrideEnabled == want.BootSourceOverrideEnabled &&
		(want.BootSourceOverrideMode == "" || got.BootSourceOverrideMode == want.BootSourceOverrideMode)
}
