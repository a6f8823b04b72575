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
	// Arch is the architecture the files are built for (ArchAMD64, ArchARM64).
	Arch string
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

// ArtifactsFrom returns the amd64 artifact URLs of a release on mirror, a
// copy of releases.rancher.com/harvester laid out as it is
// (<mirror>/<version>/harvester-<version>-vmlinuz-amd64, ...): how servers
// without a way to the internet install. An empty mirror means the
// official locations. Equinix Metal pools install amd64 only.
func ArtifactsFrom(mirror, version string) (Artifacts, error) {
	return ArtifactsForArch(mirror, version, ArchAMD64)
}

// Architectures Harvester publishes releases for, as its release files
// name them (and as Seeder's Inventory spec.arch spells them).
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
)

// ErrUnsupportedArch is returned for an architecture Harvester publishes
// no installer for.
var ErrUnsupportedArch = errors.New("unsupported architecture")

// NormalizeArch maps an architecture to the spelling of Harvester's
// release files: "" (an Inventory that names none) is amd64, and the
// kernel's own names x86_64 and aarch64 are accepted too.
func NormalizeArch(arch string) (string, error) {
	switch strings.ToLower(arch) {
	case "", ArchAMD64, "x86_64":
		return ArchAMD64, nil
	case ArchARM64, "aarch64":
		return ArchARM64, nil
	default:
		return "", fmt.Errorf("%w: %q (Harvester ships amd64 and arm64)", ErrUnsupportedArch, arch)
	}
}

// ArtifactsForArch is ArtifactsFrom for arch. Each release publishes one
// set of files per architecture, named alike with the architecture as
// the suffix (harvester-<version>-vmlinuz-arm64, -initrd-arm64,
// -rootfs-arm64.squashfs, -arm64.iso); Seeder's iPXE template builds the
// same names from an Inventory's arch.
func ArtifactsForArch(mirror, version, arch string) (Artifacts, error) {
	if err := ValidateVersion(version); err != nil {
		return Artifacts{}, err
	}
	arch, err := NormalizeArch(arch)
	if err != nil {
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
	name := "harvester-" + version
	initrd := name + "-initrd-" + arch
	return Artifacts{
		Version:    version,
		Arch:       arch,
		KernelURL:  kernels + "/" + name + "-vmlinuz-" + arch,
		InitrdURL:  kernels + "/" + initrd,
		InitrdName: initrd,
		RootfsURL:  files + "/" + name + "-rootfs-" + arch + ".squashfs",
		ISOURL:     files + "/" + name + "-" + arch + ".iso",
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

// ISOURL is the installer ISO an amd64 server of version installs:
// override when set, else the release's own.
func ISOURL(version, override string) (string, error) {
	return ISOURLForArch(version, ArchAMD64, override)
}

// ISOURLForArch is ISOURL for a server of arch.
func ISOURLForArch(version, arch, override string) (string, error) {
	if override != "" {
		return override, nil
	}
	art, err := ArtifactsForArch("", version, arch)
	if err != nil {
		return "", err
	}
	return art.ISOURL, nil
}
