package bmcsim

import (
	"net/http"
	"slices"
	"strings"
)

// A BMC of a multi-node chassis (blade enclosures, 2U4N servers) lists
// several computer systems; the simulated server is always Systems/1, and
// Options.OtherSystems are its neighbours: they answer reads and take
// resets, which are recorded so that a test can prove none was aimed at
// them.

// otherSystem is the path of a neighbour, and whether path names one.
func (b *BMC) otherSystem(path string) (string, bool) {
	id, ok := strings.CutPrefix(path, root+"/Systems/")
	if !ok {
		return "", false
	}
	id, _, _ = strings.Cut(id, "/")
	return id, slices.Contains(b.opts.OtherSystems, id)
}

// systemPaths is the Systems collection: the server and its neighbours.
func (b *BMC) systemPaths() []string {
	paths := []string{systemPath}
	for _, id := range b.opts.OtherSystems {
		paths = append(paths, root+"/Systems/"+id)
	}
	return paths
}

// otherSystemResource is a neighbour as a reader sees it: on, healthy,
// with facts of its own.
func otherSystemResource(id string) map[string]any {
	path := root + "/Systems/" + id
	s := resource(path, "#ComputerSystem.v1_20_0.ComputerSystem", "ComputerSystem.ComputerSystem")
	s["Id"], s["Name"], s["SystemType"] = id, "System "+id, "Physical"
	s["Manufacturer"], s["Model"], s["SerialNumber"] = "Simulated", "Neighbour", "NEIGHBOUR-"+id
	s["PowerState"] = "On"
	s["Status"] = map[string]any{"State": "Enabled", "Health": HealthOK, "HealthRollup": HealthOK}
	s["Actions"] = map[string]any{"#ComputerSystem.Reset": map[string]any{
		"target":                            path + "/Actions/ComputerSystem.Reset",
		"ResetType@Redfish.AllowableValues": resetTypes,
	}}
	return s
}

// resetOther records a reset sent to a neighbour and accepts it, as the
// BMC would: only the client can know it chose the wrong server.
func (b *BMC) resetOther(w http.ResponseWriter, id string) {
	b.mu.Lock()
	b.otherResets = append(b.otherResets, id)
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// OtherSystemResets are the neighbours' IDs that received a reset, in
// order.
func (b *BMC) OtherSystemResets() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.otherResets)
}
