package vmrig

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// ArtifactsMirror serves, at path on GuestURL, the part of an artifacts
// mirror (a copy of releases.rancher.com/harvester, laid out as
// harvester.ArtifactsFrom names it) that iPXE fetches for version: the
// amd64 kernel, a HaltingKernel, and an initrd of zeros. The guest's
// network reaches nothing else, and the release's real files are hundreds
// of megabytes: the machine boots the script's kernel as it would the
// real one, and the command line it prints is the installer's. The
// rootfs and ISO are not served: no kernel here reads them.
func ArtifactsMirror(path, version string) (http.Handler, error) {
	a, err := harvester.ArtifactsFrom(GuestURL+path, version)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		strings.TrimPrefix(a.KernelURL, GuestURL): HaltingKernel(1 << 20),
		strings.TrimPrefix(a.InitrdURL, GuestURL): make([]byte, 512<<10),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	}), nil
}
