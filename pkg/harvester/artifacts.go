package harvester

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

const (
	githubReleaseBase  = "https://github.com/harvester/harvester/releases/download"
	rancherReleaseBase = "https://releases.rancher.com/harvester"
)

var (
	// ErrInvalidVersion is returned for versions that have no published artifacts.
	ErrInvalidVersion = errors.New("invalid Harvester version")

	// versionPattern matches the InstancePool's spec.harvesterVersion pattern, so
	// a version the API server accepted is never refused here.
	versionPattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)
	// releasePattern is what a cluster built from a release tag reports: a final
	// release or a release candidate. Development builds report versions such as
	// "master-<sha>-head" or "v1.5-<sha>-dirty" whose artifacts do not exist.
	releasePattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-rc[0-9]+)?$`)
)

// Artifacts are the installer files of one Harvester release.
type Artifacts struct {
	Version string
	// KernelURL and InitrdURL point at GitHub releases, unless a mirror is
	// named, because Equinix's iPXE cannot validate the releases.rancher.com
	// certificate (harvester/harvester#2226).
	KernelURL string
	InitrdURL string
	// InitrdName is the file name iPXE gives the initrd; the kernel's initrd=
	// argument must name it for UEFI boots.
	InitrdName string
	// RootfsURL is fetched by dracut (with rd.noverifyssl), so releases.rancher.com works.
	RootfsURL string
	ISOURL    string
}

// ValidateVersion accepts versions like v1.4.1 or v1.5.0-rc2 and refuses
// "master", empty strings and anything else that is not a tagged release.
func ValidateVersion(version string) error {
	if version == "" {
		return fmt.Errorf("%w: version is empty", ErrInvalidVersion)
	}
	if !versionPattern.MatchString(version) {
		return fmt.Errorf("%w: %q is not a release version such as v1.4.1 (master and development builds have no pinned artifacts)", ErrInvalidVersion, version)
	}
	return nil
}

// IsReleaseVersion reports whether version is a final release or a release
// candidate, the only versions a cluster reports when it was installed from
// published artifacts.
func IsReleaseVersion(version string) bool {
	return releasePattern.MatchString(version)
}

// ArtifactsFor returns the official artifact URLs of a Harvester release.
func ArtifactsFor(version string) (Artifacts, error) {
	return ArtifactsFrom("", version)
}

// ArtifactsFrom returns the artifact URLs of a release on mirror, a copy
// of releases.rancher.com/harvester laid out as it is
// (<mirror>/<version>/harvester-<version>-vmlinuz-amd64, ...): how servers
// without a way to the internet install. An empty mirror means the
// official locations.
func ArtifactsFrom(mirror, version string) (Artifacts, error) {
	if err := ValidateVersion(version); err != nil {
		return Artifacts{}, err
	}
	kernels, files := githubReleaseBase+"/"+version, rancherReleaseBase+"/"+version
	if mirror != "" {
		if err := ValidateMirror(mirror); err != nil {
			return Artifacts{}, err
		}
		kernels = strings.TrimSuffix(mirror, "/") + "/" + version
		files = kernels
	}
	initrd := "harvester-" + version + "-initrd-amd64"
	return Artifacts{
		Version:    version,
		KernelURL:  kernels + "/harvester-" + version + "-vmlinuz-amd64",
		InitrdURL:  kernels + "/" + initrd,
		InitrdName: initrd,
		RootfsURL:  files + "/harvester-" + version + "-rootfs-amd64.squashfs",
		ISOURL:     files + "/harvester-" + version + "-amd64.iso",
	}, nil
}

// ErrInvalidMirror is returned for a mirror URL servers could not use.
var ErrInvalidMirror = errors.New("invalid artifacts mirror")

// ValidateMirror accepts an http or https URL without query or fragment:
// file names are appended to it.
func ValidateMirror(mirror string) error {
	u, err := url.Parse(mirror)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%w: %q must be an http or https URL without query or fragment", ErrInvalidMirror, mirror)
	}
	return nil
}

// ISOURL is the installer ISO a server of version installs: override when
// set, else the release's own.
func ISOURL(version, override string) (string, error) {
	if override != "" {
		return override, nil
	}
	art, err := ArtifactsFor(version)
	if err != nil {
		return "", err
	}
	return art.ISOURL, nil
}
