package harvester

import (
	"errors"
	"net/http"
)

// NewIPXEHandler serves the iPXE scripts, which hold no per-device or secret
// data, so the handler is safe on a listener the servers reach over the
// internet:
//
//	GET /ipxe/shell.ipxe                               ShellScript
//	GET /ipxe/<version>/install.ipxe                   InstallerScript
//	GET /ipxe/<version>/single-boot.ipxe?mode=...&...  SingleBootScript (query = bond options)
//
// Unknown paths and invalid versions get 404, invalid bond options 400. Mount
// it at the root of the listener; URLs come from ShellScriptURL and
// InstallerScriptURL.
func NewIPXEHandler(opts ...IPXEOption) http.Handler {
	var s scripts
	for _, o := range opts {
		o(&s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+IPXEPathPrefix+shellScriptName, func(w http.ResponseWriter, _ *http.Request) {
		writeScript(w, ShellScript())
	})
	mux.HandleFunc("GET "+IPXEPathPrefix+"{version}/"+installScriptName, s.serveInstallScript)
	mux.HandleFunc("GET "+IPXEPathPrefix+"{version}/"+singleBootName, s.serveSingleBootScript)
	return mux
}

// IPXEOption changes what the scripts the handler serves point at.
type IPXEOption func(*scripts)

// WithArtifactsMirror makes the installer scripts boot the release's files
// from mirror (see ArtifactsFrom); empty keeps the official locations.
func WithArtifactsMirror(mirror string) IPXEOption {
	return func(s *scripts) { s.mirror = mirror }
}

type scripts struct {
	mirror string
}

func (s scripts) serveInstallScript(w http.ResponseWriter, r *http.Request) {
	script, err := InstallerScriptFrom(s.mirror, r.PathValue("version"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	writeScript(w, script)
}

func (s scripts) serveSingleBootScript(w http.ResponseWriter, r *http.Request) {
	version := r.PathValue("version")
	if ValidateVersion(version) != nil {
		http.NotFound(w, r)
		return
	}
	bond := make(map[string]string, len(r.URL.Query()))
	for key, values := range r.URL.Query() {
		if len(values) != 1 {
			http.Error(w, "bond option "+key+" must be given exactly once", http.StatusBadRequest)
			return
		}
		bond[key] = values[0]
	}
	script, err := SingleBootScriptFrom(s.mirror, version, bond)
	switch {
	case errors.Is(err, ErrInvalidBondOptions):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		http.NotFound(w, r)
		return
	}
	writeScript(w, script)
}

func writeScript(w http.ResponseWriter, script string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// A failed write means the server went away mid-download; iPXE retries the
	// whole boot, and there is nobody to report the error to.
	_, _ = w.Write([]byte(script))
}
