package harvester

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metaltest"
)

func TestMinInstallDiskBytes(t *testing.T) {
	for _, tc := range []struct {
		version  string
		min      int64
		enforced bool
		wantErr  error
	}{
		{version: "v1.0.3", min: 60 << 30, enforced: true},
		{version: "v1.1.2", min: 60 << 30, enforced: true},
		{version: "v1.2.0", min: 250 << 30, enforced: true},
		{version: "v1.4.1", min: 250 << 30, enforced: true},
		{version: "v1.7.1", min: 250 << 30, enforced: true},
		{version: "v1.7.2-rc3", min: 250 << 30, enforced: true},
		// The release candidates of v1.8.0 already carry the skipchecks change.
		{version: "v1.8.0-rc1", enforced: false},
		{version: "v1.8.0", enforced: false},
		{version: "v1.10.0", enforced: false},
		{version: "v2.0.0", enforced: false},
		{version: "v0.3.0", wantErr: ErrInvalidVersion},
		{version: "master", wantErr: ErrInvalidVersion},
		{version: "", wantErr: ErrInvalidVersion},
	} {
		t.Run(tc.version, func(t *testing.T) {
			least, enforced, err := MinInstallDiskBytes(tc.version)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.enforced, enforced)
			assert.Equal(t, tc.min, least)
		})
	}
}

// Plans as the plans API describes them.
var (
	c3Small = metal.Plan{Slug: "c3.small.x86", Drives: []metal.PlanDrive{{Count: 2, Type: "SSD", Size: "480GB", Category: "boot"}}}
	// The storage drives are listed first here on purpose: sda is a boot drive.
	c3Medium = metal.Plan{Slug: "c3.medium.x86", Drives: []metal.PlanDrive{
		{Count: 2, Type: "SSD", Size: "480GB", Category: "storage"}, {Count: 2, Type: "SSD", Size: "240GB", Category: "boot"}}}
	m3Large = metal.Plan{Slug: "m3.large.x86", Drives: []metal.PlanDrive{
		{Count: 2, Type: "SSD", Size: "240GB", Category: "boot"}, {Count: 2, Type: "NVME", Size: "3.8TB", Category: "storage"}}}
	tiny = metal.Plan{Slug: "t1.tiny.x86", Drives: []metal.PlanDrive{{Count: 1, Type: "SSD", Size: "120GB", Category: "boot"}}}
)

func TestCheckInstallDisk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		plan    metal.Plan
		device  string
		version string
		wantErr error
		// every string must appear in the message
		want []string
	}{
		{name: "480GB boot drive holds v1.7", plan: c3Small, device: "/dev/sda", version: "v1.7.1"},
		{name: "second boot drive", plan: c3Small, device: "/dev/sdb", version: "v1.7.1"},
		{
			name: "240GB boot drive too small for v1.7", plan: c3Medium, device: "/dev/sda", version: "v1.7.1",
			wantErr: ErrInstallDiskTooSmall,
			want: []string{"/dev/sda on plan c3.medium.x86 is a 240GB SSD drive of 223 GiB",
				"Harvester v1.7.1 needs an install disk of at least 250 GiB, even with skipchecks",
				"set installDevice to a drive that is large enough (/dev/sdc (480GB SSD, 447 GiB), /dev/sdd (480GB SSD, 447 GiB))",
				"use Harvester v1.8.0 or later"},
		},
		{name: "storage SSD picked instead", plan: c3Medium, device: "/dev/sdc", version: "v1.7.1"},
		{name: "v1.8 installs on the small drive", plan: c3Medium, device: "/dev/sda", version: "v1.8.0"},
		{name: "v1.1 needed only 60 GiB", plan: c3Medium, device: "/dev/sda", version: "v1.1.2"},
		{
			name: "NVMe suggested on a plan with small boot drives", plan: m3Large, device: "/dev/sda", version: "v1.4.1",
			wantErr: ErrInstallDiskTooSmall,
			want:    []string{"/dev/nvme0n1 (3.8TB NVME, 3539 GiB)", "/dev/nvme1n1 (3.8TB NVME, 3539 GiB)"},
		},
		{name: "NVMe install device", plan: m3Large, device: "/dev/nvme1n1", version: "v1.4.1"},
		{
			name: "no drive is large enough", plan: tiny, device: "/dev/sda", version: "v1.5.0",
			wantErr: ErrInstallDiskTooSmall,
			want:    []string{"120GB SSD drive of 111 GiB", "use Harvester v1.8.0 or later (spec.harvesterVersion) or a plan with larger drives"},
		},
		{
			name: "a by-id path on a plan with no large drive", plan: tiny, device: "/dev/disk/by-id/ata-XYZ", version: "v1.5.0",
			wantErr: ErrInstallDiskTooSmall,
			want:    []string{"plan t1.tiny.x86 has no drive of 250 GiB or more for /dev/disk/by-id/ata-XYZ"},
		},
		// The plan cannot say which drive a by-id path names; some are large enough.
		{name: "a by-id path on a mixed plan", plan: c3Medium, device: "/dev/disk/by-id/ata-XYZ", version: "v1.5.0"},
		{
			name: "a device the plan does not have", plan: c3Small, device: "/dev/sdc", version: "v1.8.0",
			wantErr: nil, // v1.8 sets no minimum, so the drive list is not consulted
		},
		{
			name: "a device the plan does not have, v1.7", plan: c3Small, device: "/dev/sdc", version: "v1.7.0",
			wantErr: ErrInstallDiskMissing,
			want:    []string{"plan c3.small.x86 has no /dev/sdc; its drives are /dev/sda (480GB SSD, 447 GiB), /dev/sdb (480GB SSD, 447 GiB)"},
		},
		{name: "a plan that lists no drives", plan: metal.Plan{Slug: "x"}, device: "/dev/sda", version: "v1.7.0"},
		{
			name: "a size the plan does not spell out", device: "/dev/sda", version: "v1.7.0",
			plan: metal.Plan{Slug: "odd", Drives: []metal.PlanDrive{{Count: 1, Type: "SSD", Size: "large", Category: "boot"}}},
		},
		{name: "bad version", plan: c3Small, device: "/dev/sda", version: "master", wantErr: ErrInvalidVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckInstallDisk(tc.plan, tc.device, tc.version)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestDriveNaming(t *testing.T) {
	assert.Equal(t, "a", sdLetters(0))
	assert.Equal(t, "z", sdLetters(25))
	assert.Equal(t, "aa", sdLetters(26))
	assert.Equal(t, "ab", sdLetters(27))
	assert.Equal(t, "ba", sdLetters(52))

	s3 := metal.Plan{Slug: "s3.xlarge.x86", Drives: []metal.PlanDrive{
		{Count: 12, Type: "HDD", Size: "8TB", Category: "storage"},
		{Count: 2, Type: "SSD", Size: "960GB", Category: "boot"},
		{Count: 2, Type: "NVME", Size: "256GB", Category: "cache"},
	}}
	var names []string
	for _, d := range planDrives(s3) {
		names = append(names, d.device+"="+d.spec.Size)
	}
	assert.Equal(t, []string{
		"/dev/sda=960GB", "/dev/sdb=960GB",
		"/dev/sdc=8TB", "/dev/sdd=8TB", "/dev/sde=8TB", "/dev/sdf=8TB", "/dev/sdg=8TB", "/dev/sdh=8TB",
		"/dev/sdi=8TB", "/dev/sdj=8TB", "/dev/sdk=8TB", "/dev/sdl=8TB", "/dev/sdm=8TB", "/dev/sdn=8TB",
		"/dev/nvme0n1=256GB", "/dev/nvme1n1=256GB",
	}, names)

	for size, want := range map[string]int64{
		"480GB": 480e9, "3.8TB": 3.8e12, "256 GB": 256e9, "1.92tb": 1.92e12, "500GiB": 500 << 30, "": 0, "big": 0, "12": 0,
	} {
		assert.Equal(t, want, driveBytes(size), size)
	}
}

// TestCheckInstallDiskThroughPlansAPI reads the plans the way the controller
// will, through the real SDK from the plans API, and checks every plan the
// API lists against a release with and without the installer's minimum.
func TestCheckInstallDiskThroughPlansAPI(t *testing.T) {
	_, client := metaltest.NewClient(t, "token", "8a2e5c0c-0000-4000-8000-000000000001")
	catalog := metal.NewPlanCatalog(0, nil)
	plans, err := catalog.Plans(context.Background(), client)
	require.NoError(t, err)
	require.NotEmpty(t, plans)

	small, ok, err := catalog.Plan(context.Background(), client, "C3.SMALL.X86")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, CheckInstallDisk(small, "/dev/sda", "v1.7.1"))

	medium, ok, err := catalog.Plan(context.Background(), client, "c3.medium.x86")
	require.NoError(t, err)
	require.True(t, ok)
	err = CheckInstallDisk(medium, "/dev/sda", "v1.7.1")
	require.ErrorIs(t, err, ErrInstallDiskTooSmall)
	assert.Contains(t, err.Error(), "/dev/sda on plan c3.medium.x86 is a 240GB SSD drive of 223 GiB")

	for _, p := range plans {
		require.NotEmpty(t, p.Drives, "plan %s lists no drives", p.Slug)
		assert.NoError(t, CheckInstallDisk(p, "/dev/sda", "v1.8.0"), p.Slug)
	}
	_, ok, err = catalog.Plan(context.Background(), client, "no.such.plan")
	require.NoError(t, err)
	assert.False(t, ok)
}
