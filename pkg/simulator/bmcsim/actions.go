package bmcsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// resetTypes are the ResetType values the simulated system accepts.
var resetTypes = []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle"}

func (b *BMC) action(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case path == systemPath+"/Actions/ComputerSystem.Reset":
		b.reset(w, r)
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
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.powerLocked()
	now, delay := b.opts.Now(), b.opts.PowerTransition
	settle := func(during, target string) {
		if delay <= 0 {
			b.power, b.powerTarget = target, ""
			return
		}
		b.power, b.powerTarget, b.powerAt = during, target, now.Add(delay)
	}
	switch req.ResetType {
	case "On":
		if cur != "On" {
			settle("PoweringOn", "On")
		}
	case "ForceOff":
		b.power, b.powerTarget = "Off", ""
	case "GracefulShutdown":
		if cur != "Off" {
			settle("PoweringOff", "Off")
		}
	case "ForceRestart":
		if cur == "Off" {
			writeError(w, http.StatusConflict, "ActionNotSupported", "The action ComputerSystem.Reset ForceRestart is not supported while the system is powered off.")
			return
		}
		settle("PoweringOn", "On")
	case "PowerCycle":
		settle("PoweringOn", "On")
	}
	b.resets = append(b.resets, Reset{Type: req.ResetType, At: time.Now()})
	w.WriteHeader(http.StatusNoContent)
}
