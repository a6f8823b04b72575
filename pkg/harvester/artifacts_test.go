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
