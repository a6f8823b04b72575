package bmcsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Boot override targets, in Redfish's words (BootSourceOverrideTarget).
const (
	BootNone = "None" // no override: the host boots as its firmware is set
	BootPxe  = "Pxe"  // the network
	BootHdd  = "Hdd"  // the first disk
	// BootCd is the virtual CD: the image in the CD slot.
	BootCd = "Cd"
	// BootUefiHTTP is the UEFI firmware's HTTP boot of HttpBootUri.
	BootUefiHTTP = "UefiHttp"
)

// DefaultBootTargets are the override targets a system allows unless
// Options.BootTargets says otherwise, as common BMCs list them.
var DefaultBootTargets = []string{BootNone, BootPxe, BootHdd, BootCd, "Usb", "BiosSetup", BootUefiHTTP}

// Values of BootSourceOverrideEnabled.
const (
	BootDisabled   = "Disabled"
	BootOnce       = "Once"
	BootContinuous = "Continuous"
)

// PowerChange is what a power transition did to the host.
type PowerChange string

// Power changes.
const (
	// PowerChangeOn: the host started from off.
	PowerChangeOn PowerChange = "On"
	// PowerChangeOff: the host lost power.
	PowerChangeOff PowerChange = "Off"
	// PowerChangeRestart: the host restarted while on (a reset, a cycle).
	PowerChangeRestart PowerChange = "Restart"
)

// PowerTransition is one change of the host's power and, for a start, what
// it boots from. Package ipmisim reports its transitions in this type too,
// so a simulated server can follow either kind of BMC.
type PowerTransition struct {
	Change PowerChange
	// Boot is the override target the host starts with: BootPxe after a
	// one-time network boot was set, BootNone when it boots as set; empty
	// for PowerChangeOff.
	Boot string
	// Cause names what did it: the Redfish ResetType, the IPMI chassis
	// control, or the test control.
	Cause string
	// Media is the image in the CD slot at a start from "Cd", URI the
	// HttpBootUri at a start from "UefiHttp": what the host boots.
	Media, URI string
	At         time.Time
}

// NetworkBoot says the host started, or restarted, from the network.
func (p PowerTransition) NetworkBoot() bool {
	return p.Change != PowerChangeOff && p.Boot == BootPxe
}

// BootImage is the URL of the image a start boots from the virtual CD or
// by the firmware's HTTP boot; "" for any other start, and a power off.
func (p PowerTransition) BootImage() string {
	switch {
	case p.Change == PowerChangeOff:
		return ""
	case p.Boot == BootCd:
		return p.Media
	case p.Boot == BootUefiHTTP:
		return p.URI
	}
	return ""
}

// BootOverride is the system's boot override as Redfish reports it.
type BootOverride struct {
	Target, Enabled, Mode string
	// HTTPBootURI is what a UefiHttp boot fetches (Options.HTTPBoot).
	HTTPBootURI string
}

// BootOverride returns the current override.
func (b *BMC) BootOverride() BootOverride {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.boot
}

// OnPowerTransition adds fn to the functions called after every power
// transition, in order, on the goroutine that changed the power (a
// request's, or a test control's) and outside the BMC's lock: fn may call
// the BMC, and must not block for long.
func (b *BMC) OnPowerTransition(fn func(PowerTransition)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hooks = append(b.hooks, fn)
}

// PowerTransitions returns every transition so far, in order.
func (b *BMC) PowerTransitions() []PowerTransition {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]PowerTransition(nil), b.transitions...)
}

// transitionLocked records a change of the host's power and returns it.
// A start consumes a one-time override, as a BMC does once the host has
// booted with it.
func (b *BMC) transitionLocked(change PowerChange, cause string) PowerTransition {
	t := PowerTransition{Change: change, Cause: cause, At: time.Now()}
	if change != PowerChangeOff {
		t.Boot = BootNone
		if b.boot.Enabled != BootDisabled {
			t.Boot = b.boot.Target
		}
		switch t.Boot {
		case BootCd:
			if m := b.media[MediaSlotCD]; m != nil && m.Inserted {
				t.Media = m.Image
			}
		case BootUefiHTTP:
			t.URI = b.boot.HTTPBootURI
		}
		if b.boot.Enabled == BootOnce {
			b.boot.Target, b.boot.Enabled = BootNone, BootDisabled
		}
	}
	b.transitions = append(b.transitions, t)
	return t
}

// notify calls the hooks with the transitions a change made.
func (b *BMC) notify(ts ...PowerTransition) {
	b.mu.Lock()
	hooks := slices.Clone(b.hooks)
	b.mu.Unlock()
	for _, t := range ts {
		for _, fn := range hooks {
			fn(t)
		}
	}
}

// bootResource is the system's Boot property.
func (b *BMC) bootResource() map[string]any {
	out := map[string]any{
		"BootSourceOverrideTarget":                         b.boot.Target,
		"BootSourceOverrideTarget@Redfish.AllowableValues": b.bootTargets(),
		"BootSourceOverrideEnabled":                        b.boot.Enabled,
	}
	if b.boot.Mode != "" {
		out["BootSourceOverrideMode"] = b.boot.Mode
	}
	if b.opts.HTTPBoot {
		out["HttpBootUri"] = b.boot.HTTPBootURI
	}
	return out
}

func (b *BMC) bootTargets() []string {
	if b.opts.BootTargets != nil {
		return b.opts.BootTargets
	}
	return DefaultBootTargets
}

// patchSystem applies a PATCH of the system. Only the boot override is
// writable; every property is checked before any is applied, as BMCs
// refuse the whole request for one bad property.
func (b *BMC) patchSystem(w http.ResponseWriter, r *http.Request) {
	var req map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.")
		return
	}
	var boot map[string]string
	for name, raw := range req {
		if name != "Boot" {
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", name))
			return
		}
		if err := json.Unmarshal(raw, &boot); err != nil {
			writeError(w, http.StatusBadRequest, "PropertyValueTypeError", "The value for the property Boot is of a different type than the property can accept.")
			return
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	next := b.boot
	for name, value := range boot {
		var allowed []string
		switch name {
		case "BootSourceOverrideTarget":
			allowed, next.Target = b.bootTargets(), value
		case "BootSourceOverrideEnabled":
			allowed, next.Enabled = []string{BootDisabled, BootOnce, BootContinuous}, value
		case "BootSourceOverrideMode":
			if b.boot.Mode == "" {
				writeError(w, http.StatusBadRequest, "PropertyUnknown", "The property BootSourceOverrideMode is not in the list of valid properties for the resource.")
				return
			}
			if b.opts.BootModeReadOnly {
				writeError(w, http.StatusBadRequest, "PropertyNotWritable", "The property BootSourceOverrideMode is a read only property and cannot be assigned a value.")
				return
			}
			allowed, next.Mode = []string{"UEFI", "Legacy"}, value
		case "HttpBootUri":
			if !b.opts.HTTPBoot {
				writeError(w, http.StatusBadRequest, "PropertyUnknown", "The property HttpBootUri is not in the list of valid properties for the resource.")
				return
			}
			next.HTTPBootURI = value
			continue
		default:
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", name))
			return
		}
		if !slices.Contains(allowed, value) {
			writeError(w, http.StatusBadRequest, "PropertyValueNotInList", fmt.Sprintf("The value %q for the property %s is not in the list of acceptable values.", value, name))
			return
		}
	}
	if _, named := boot["BootSourceOverrideMode"]; !named && b.opts.BootModeResetWhenOmitted && next.Mode != "" {
		next.Mode = "Legacy"
	}
	if !b.opts.ForgetBootOverride {
		b.boot = next
	}
	w.WriteHeader(http.StatusNoContent)
}
