package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArtifactsFor(t *testing.T) {
	got, err := ArtifactsFor("v1.4.1")
	require.NoError(t, err)
	assert.Equal(t, Artifacts{
		Version:    "v1.4.1",
		Arch:       "amd64",
		KernelURL:  "https://github.com/harvester/harvester/releases/download/v1.4.1/harvester-v1.4.1-vmlinuz-amd64",
		InitrdURL:  "https://github.com/harvester/harvester/releases/download/v1.4.1/harvester-v1.4.1-initrd-amd64",
		InitrdName: "harvester-v1.4.1-initrd-amd64",
		RootfsURL:  "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-rootfs-amd64.squashfs",
		ISOURL:     "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso",
	}, got)
}

// A mirror is a copy of releases.rancher.com/harvester: every file of the
// release comes from it, under the version's folder.
func TestArtifactsFromMirror(t *testing.T) {
	for _, mirror := range []string{"http://10.0.0.2:8080/harvester", "http://10.0.0.2:8080/harvester/"} {
		got, err := ArtifactsFrom(mirror, "v1.4.1")
		require.NoError(t, err)
		assert.Equal(t, Artifacts{
			Version:    "v1.4.1",
			Arch:       "amd64",
			KernelURL:  "http://10.0.0.2:8080/harvester/v1.4.1/harvester-v1.4.1-vmlinuz-amd64",
			InitrdURL:  "http://10.0.0.2:8080/harvester/v1.4.1/harvester-v1.4.1-initrd-amd64",
			InitrdName: "harvester-v1.4.1-initrd-amd64",
			RootfsURL:  "http://10.0.0.2:8080/harvester/v1.4.1/harvester-v1.4.1-rootfs-amd64.squashfs",
			ISOURL:     "http://10.0.0.2:8080/harvester/v1.4.1/harvester-v1.4.1-amd64.iso",
		}, got)
	}
	official, err := ArtifactsFrom("", "v1.4.1")
	require.NoError(t, err)
	want, err := ArtifactsFor("v1.4.1")
	require.NoError(t, err)
	assert.Equal(t, want, official)
	for _, bad := range []string{"ftp://mirror/harvester", "mirror.example.com/harvester", "http://mirror/?v=1", "http://mirror/#x", "http://"} {
		_, err := ArtifactsFrom(bad, "v1.4.1")
		assert.ErrorIs(t, err, ErrInvalidMirror, bad)
	}
}

// Harvester's arm64 release files carry the architecture where the amd64
// ones do; the ISO a join configuration names follows the server's arch.
func TestArtifactsForArch(t *testing.T) {
	for _, arch := range []string{"arm64", "aarch64", "ARM64"} {
		got, err := ArtifactsForArch("", "v1.5.0", arch)
		require.NoError(t, err)
		assert.Equal(t, Artifacts{
			Version:    "v1.5.0",
			Arch:       "arm64",
			KernelURL:  "https://github.com/harvester/harvester/releases/download/v1.5.0/harvester-v1.5.0-vmlinuz-arm64",
			InitrdURL:  "https://github.com/harvester/harvester/releases/download/v1.5.0/harvester-v1.5.0-initrd-arm64",
			InitrdName: "harvester-v1.5.0-initrd-arm64",
			RootfsURL:  "https://releases.rancher.com/harvester/v1.5.0/harvester-v1.5.0-rootfs-arm64.squashfs",
			ISOURL:     "https://releases.rancher.com/harvester/v1.5.0/harvester-v1.5.0-arm64.iso",
		}, got, arch)
	}
	for _, arch := range []string{"", "amd64", "x86_64"} {
		got, err := ArtifactsForArch("http://10.0.0.2/h", "v1.5.0", arch)
		require.NoError(t, err)
		assert.Equal(t, "http://10.0.0.2/h/v1.5.0/harvester-v1.5.0-vmlinuz-amd64", got.KernelURL, arch)
		assert.Equal(t, "amd64", got.Arch)
	}
	_, err := ArtifactsForArch("", "v1.5.0", "riscv64")
	assert.ErrorIs(t, err, ErrUnsupportedArch)
	_, err = ArtifactsForArch("", "master", "arm64")
	assert.ErrorIs(t, err, ErrInvalidVersion)

	iso, err := ISOURLForArch("v1.5.0", "arm64", "")
	require.NoError(t, err)
	assert.Equal(t, "https://releases.rancher.com/harvester/v1.5.0/harvester-v1.5.0-arm64.iso", iso)
	iso, err = ISOURLForArch("v1.5.0", "arm64", "http://mirror/x.iso")
	require.NoError(t, err)
	assert.Equal(t, "http://mirror/x.iso", iso, "an override wins")
	amd, err := ISOURL("v1.5.0", "")
	require.NoError(t, err)
	assert.Equal(t, "https://releases.rancher.com/harvester/v1.5.0/harvester-v1.5.0-amd64.iso", amd, "Equinix callers keep amd64")
}

func TestValidateVersion(t *testing.T) {
	tests := []struct {
		version string
		valid   bool
		release bool
	}{
		{version: "v1.4.1", valid: true, release: true},
		{version: "v1.5.0-rc2", valid: true, release: true},
		{version: "v1.6.0-beta.1", valid: true, release: false},
		{version: "", valid: false},
		{version: "master", valid: false},
		{version: "master-1a2b3c4-head", valid: false},
		{version: "1.4.1", valid: false},
		{version: "v1.4", valid: false},
		{version: "v1.4.1/../../x", valid: false},
		{version: "v1.4.1 ", valid: false},
		{version: "v1.4.1-${x}", valid: false},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			err := ValidateVersion(tc.version)
			if tc.valid {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalidVersion)
				_, aerr := ArtifactsFor(tc.version)
				assert.ErrorIs(t, aerr, ErrInvalidVersion)
			}
			assert.Equal(t, tc.release, IsReleaseVersion(tc.version))
		})
	}
}
