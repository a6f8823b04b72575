package harvester

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Smallest install disk the installer accepts for a single-disk install, the
// only kind the addon asks for (no separate data disk). Until v1.8.0 the
// installer checks this while it partitions the disk, after and regardless of
// skipchecks, so a server with a smaller disk boots, fails its install and is
// billed for nothing; from v1.8.0 skipchecks, which the addon always sets,
// skips the check.
const (
	gib = int64(1) << 30
	// minInstallDiskV1 applies to v1.0.x and v1.1.x.
	minInstallDiskV1 = 60 * gib
	// minInstallDiskV2 applies from v1.2.0 to v1.7.x.
	minInstallDiskV2 = 250 * gib
)

var (
	// ErrInstallDiskTooSmall means the pool's install disk cannot hold the
	// Harvester version it would install.
	ErrInstallDiskTooSmall = errors.New("install disk too small")
	// ErrInstallDiskMissing means the plan has no drive the install device can name.
	ErrInstallDiskMissing = errors.New("install disk not on the plan")

	majorMinorPattern = regexp.MustCompile(`^v([0-9]+)\.([0-9]+)\.`)
	sdPattern         = regexp.MustCompile(`^/dev/sd([a-z]+)$`)
	nvmePattern       = regexp.MustCompile(`^/dev/nvme([0-9]+)n1$`)
	sizePattern       = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KMGTP]I?B)$`)
)

// MinInstallDiskBytes returns the smallest install disk the installer of a
// Harvester version accepts in the addon's automatic installs, and whether it
// enforces a minimum at all.
func MinInstallDiskBytes(version string) (int64, bool, error) {
	if err := ValidateVersion(version); err != nil {
		return 0, false, err
	}
	m := majorMinorPattern.FindStringSubmatch(version)
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	switch {
	case major == 0:
		return 0, false, fmt.Errorf("%w: %s predates the automatic-install configuration the addon renders", ErrInvalidVersion, version)
	case major == 1 && minor < 2:
		return minInstallDiskV1, true, nil
	case major == 1 && minor < 8:
		return minInstallDiskV2, true, nil
	default:
		return 0, false, nil
	}
}

// drive is one physical drive of a plan and the Linux device name it gets.
type drive struct {
	device string
	spec   metal.PlanDrive
	bytes  int64 // 0 when the plan's size cannot be read
}

// planDrives lists a plan's drives one by one under the names Linux gives them
// on Equinix Metal: SATA/SAS drives are sda, sdb, … with the boot drives first,
// NVMe drives nvme0n1, nvme1n1, … in the plan's order.
func planDrives(plan metal.Plan) []drive {
	var boot, other, nvme []metal.PlanDrive
	for _, d := range plan.Drives {
		switch {
		case strings.EqualFold(d.Type, "NVME"):
			nvme = append(nvme, d)
		case strings.EqualFold(d.Category, "boot"):
			boot = append(boot, d)
		default:
			other = append(other, d)
		}
	}
	var out []drive
	n := 0
	for _, d := range append(boot, other...) {
		for i := 0; i < d.Count; i++ {
			out = append(out, drive{device: "/dev/sd" + sdLetters(n), spec: d, bytes: driveBytes(d.Size)})
			n++
		}
	}
	n = 0
	for _, d := range nvme {
		for i := 0; i < d.Count; i++ {
			out = append(out, drive{device: fmt.Sprintf("/dev/nvme%dn1", n), spec: d, bytes: driveBytes(d.Size)})
			n++
		}
	}
	return out
}

// sdLetters is the kernel's suffix for the n-th sd disk: a…z, aa, ab, …
func sdLetters(n int) string {
	s := ""
	for n++; n > 0; n = (n - 1) / 26 {
		s = string(rune('a'+(n-1)%26)) + s
	}
	return s
}

// driveBytes reads a plan's drive size. Equinix writes drive sizes the way
// vendors sell them, in decimal units (480GB, 3.8TB); binary units are read as
// such should they appear.
func driveBytes(size string) int64 {
	m := sizePattern.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(size)))
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	exp := strings.Index("KMGTP", m[2][:1]) + 1
	base := 1000.0
	if strings.Contains(m[2], "I") {
		base = 1024
	}
	return int64(v * math.Pow(base, float64(exp)))
}

func describe(d drive) string {
	what := strings.TrimSpace(d.spec.Size + " " + d.spec.Type)
	if d.bytes == 0 {
		return fmt.Sprintf("%s (%s)", d.device, what)
	}
	return fmt.Sprintf("%s (%s, %d GiB)", d.device, what, d.bytes/gib)
}

// CheckInstallDisk says, before any server is created, whether the pool's
// install device on its plan can hold the Harvester version it would install.
// It returns nil when the disk is large enough, when the installer sets no
// minimum, and when the plan does not say enough to tell; otherwise an error
// wrapping ErrInstallDiskTooSmall or ErrInstallDiskMissing whose message names
// the drive, the minimum and what to change.
func CheckInstallDisk(plan metal.Plan, device, version string) error {
	minBytes, enforced, err := MinInstallDiskBytes(version)
	if err != nil || !enforced {
		return err
	}
	drives := planDrives(plan)
	if len(drives) == 0 {
		return nil
	}
	need := fmt.Sprintf("the installer of Harvester %s needs an install disk of at least %d GiB, even with skipchecks (v1.8.0 and later skip this check)",
		version, minBytes/gib)
	var large []string
	for _, d := range drives {
		if d.bytes >= minBytes {
			large = append(large, describe(d))
		}
	}
	fix := "use Harvester v1.8.0 or later (spec.harvesterVersion) or a plan with larger drives"
	if len(large) > 0 {
		fix = fmt.Sprintf("set installDevice to a drive that is large enough (%s), %s", strings.Join(large, ", "), fix)
	}

	mapped := sdPattern.MatchString(device) || nvmePattern.MatchString(device)
	if !mapped {
		// A path the plan cannot name (by-id, by-path, md, …): only a plan
		// whose every drive is too small is certain to fail.
		if len(large) == 0 {
			return fmt.Errorf("%w: plan %s has no drive of %d GiB or more for %s: %s; %s",
				ErrInstallDiskTooSmall, plan.Slug, minBytes/gib, device, need, fix)
		}
		return nil
	}
	for _, d := range drives {
		if d.device != device {
			continue
		}
		if d.bytes == 0 || d.bytes >= minBytes {
			return nil
		}
		return fmt.Errorf("%w: %s on plan %s is a %s drive of %d GiB, but %s; %s",
			ErrInstallDiskTooSmall, device, plan.Slug, strings.TrimSpace(d.spec.Size+" "+d.spec.Type), d.bytes/gib, need, fix)
	}
	names := make([]string, 0, len(drives))
	for _, d := range drives {
		names = append(names, describe(d))
	}
	return fmt.Errorf("%w: plan %s has no %s; its drives are %s: set installDevice to one of them",
		ErrInstallDiskMissing, plan.Slug, device, strings.Join(names, ", "))
}
