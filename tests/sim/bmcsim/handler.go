package bmcsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

const (
	root          = "/redfish/v1"
	sessionsPath  = root + "/SessionService/Sessions"
	redfishErrReg = "Base.1.8."
)

// Handler serves the Redfish API under /redfish/v1.
func (b *BMC) Handler() http.Handler {
	return http.HandlerFunc(b.serve)
}

func (b *BMC) serve(w http.ResponseWriter, r *http.Request) {
	if b.applyFaults(w, r) {
		return
	}
	b.handle(w, r)
}

// handle answers a request the faults let through.
func (b *BMC) handle(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path != root && !strings.HasPrefix(path, root+"/") {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
		return
	}
	// The service root and the login itself are open to anyone, as the
	// Redfish specification requires; everything else needs credentials.
	switch {
	case path == root || path == root+"/odata" || path == root+"/$metadata":
	case strings.HasPrefix(path, root+"/SessionService") && b.opts.NoSessionService:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", path))
		return
	case path == sessionsPath && r.Method == http.MethodPost:
		b.login(w, r)
		return
	default:
		if !b.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="Redfish"`)
			writeError(w, http.StatusUnauthorized, "NoValidSession", "There is no valid session established with the implementation.")
			return
		}
	}
	if r.Method == http.MethodDelete && strings.HasPrefix(path, sessionsPath+"/") {
		b.logout(w, strings.TrimPrefix(path, sessionsPath+"/"))
		return
	}
	if r.Method == http.MethodPatch && path == systemPath {
		b.patchSystem(w, r)
		return
	}
	if r.Method == http.MethodPatch {
		b.mu.Lock()
		id, action, ok := b.mediaSlotOf(path)
		b.mu.Unlock()
		if ok && action == "" {
			b.patchMedia(w, r, id)
			return
		}
	}
	if r.Method == http.MethodPost {
		b.action(w, r, path)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", allowed(path))
		writeError(w, http.StatusMethodNotAllowed, "OperationNotAllowed", fmt.Sprintf("The %s operation is not allowed on %s.", r.Method, path))
		return
	}
	body, ok := b.resource(path, r)
	if !ok {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", path))
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// allowed names the methods a resource takes.
func allowed(path string) string {
	if path == systemPath {
		return "GET, HEAD, PATCH"
	}
	return "GET, HEAD"
}

// resource starts a Redfish resource with the OData annotations every
// resource of the DMTF schema carries.
func resource(id, odataType, context string) map[string]any {
	return map[string]any{
		"@odata.id":      id,
		"@odata.type":    odataType,
		"@odata.context": root + "/$metadata#" + context,
	}
}

func collection(id, odataType, context, name string, members []string) map[string]any {
	c := resource(id, odataType, context)
	refs := make([]map[string]any, 0, len(members))
	for _, m := range members {
		refs = append(refs, map[string]any{"@odata.id": m})
	}
	c["Name"], c["Members"], c["Members@odata.count"] = name, refs, len(refs)
	return c
}

func link(id string) map[string]any { return map[string]any{"@odata.id": id} }

func status(health string, absent bool) map[string]any {
	if absent {
		return map[string]any{"State": "Absent"}
	}
	return map[string]any{"State": "Enabled", "Health": health}
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("OData-Version", "4.0")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// writeError answers with the Redfish error object: a general error code
// and one extended-info message naming the Base registry message.
func writeError(w http.ResponseWriter, code int, messageID, message string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{
		"code":    redfishErrReg + "GeneralError",
		"message": "A general error has occurred. See ExtendedInfo for more information.",
		"@Message.ExtendedInfo": []map[string]any{{
			"@odata.type": "#Message.v1_1_1.Message",
			"MessageId":   redfishErrReg + messageID,
			"Message":     message,
			"Severity":    "Critical",
			"Resolution":  "None.",
		}},
	}})
}
