package bmcsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// resetTypes are the ResetType values the simulated system accepts.
var resetTypes = []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle"}

func (b *BMC) action(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case path == systemPath+"/Actions/ComputerSystem.Reset":
		b.reset(w, r)
	case strings.HasSuffix(path, "/Actions/ComputerSystem.Reset"):
		if id, ok := b.otherSystem(path); ok {
			b.resetOther(w, id)
			return
		}
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", path))
	case b.mediaAction(w, r, path):
	case b.logAction(path):
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "OperationNotAllowed", fmt.Sprintf("The POST operation is not allowed on %s.", path))
	}
}

// reset applies a ComputerSystem.Reset. Forced actions act at once;
// graceful ones and power-on pass through PoweringOff/PoweringOn for
// Options.PowerTransition. ForceRestart of a system that is off is refused
// with 409, as common BMCs do, so a client must choose PowerCycle then.
func (b *BMC) reset(w http.ResponseWriter, r *http.Request) {
	var req struct{ ResetType string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.")
		return
	}
	if !slices.Contains(resetTypes, req.ResetType) {
		writeError(w, http.StatusBadRequest, "ActionParameterNotSupported",
			fmt.Sprintf("The parameter ResetType for the action ComputerSystem.Reset is not supported on the target resource: %q.", req.ResetType))
		return
	}
	ts, code, msg := b.applyReset(req.ResetType)
	if code != 0 {
		writeError(w, code, "ActionNotSupported", msg)
		return
	}
	b.notify(ts...)
	w.WriteHeader(http.StatusNoContent)
}

// applyReset changes the power for a ResetType and returns the
// transitions it made, or the status and message of a refusal.
func (b *BMC) applyReset(resetType string) ([]PowerTransition, int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.powerLocked()
	wasOn := cur == "On" || cur == "PoweringOn"
	now, delay := b.opts.Now(), b.opts.PowerTransition
	settle := func(during, target string) {
		if delay <= 0 {
			b.power, b.powerTarget = target, ""
			return
		}
		b.power, b.powerTarget, b.powerAt = during, target, now.Add(delay)
	}
	var ts []PowerTransition
	switch resetType {
	case "On":
		if cur != "On" {
			settle("PoweringOn", "On")
		}
		if !wasOn {
			ts = append(ts, b.transitionLocked(PowerChangeOn, resetType))
		}
	case "ForceOff":
		b.power, b.powerTarget = "Off", ""
		if wasOn {
			ts = append(ts, b.transitionLocked(PowerChangeOff, resetType))
		}
	case "GracefulShutdown":
		if cur != "Off" {
			settle("PoweringOff", "Off")
		}
		if wasOn {
			ts = append(ts, b.transitionLocked(PowerChangeOff, resetType))
		}
	case "ForceRestart":
		if cur == "Off" {
			return nil, http.StatusConflict, "The action ComputerSystem.Reset ForceRestart is not supported while the system is powered off."
		}
		settle("PoweringOn", "On")
		ts = append(ts, b.transitionLocked(PowerChangeRestart, resetType))
	case "PowerCycle":
		settle("PoweringOn", "On")
		change := PowerChangeOn
		if wasOn {
			change = PowerChangeRestart
		}
		ts = append(ts, b.transitionLocked(change, resetType))
	}
	b.resets = append(b.resets, Reset{Type: resetType, At: time.Now()})
	return ts, 0, ""
}
