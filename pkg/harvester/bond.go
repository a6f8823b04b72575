package harvester

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Bond option keys and the installer's defaults (pkg/config cos.go updateBond).
const (
	BondOptionMode        = "mode"
	BondOptionMiimon      = "miimon"
	BondOptionARPInterval = "arp_interval"
	DefaultBondMode       = "active-backup"
	DefaultBondMiimon     = "100"
	maxBondOptions        = 16
)

// ErrInvalidBondOptions is returned for bond options the installer or the
// kernel command line cannot carry.
var ErrInvalidBondOptions = errors.New("invalid management bond options")

var (
	// bondModes are the Linux bonding modes the installer documents.
	bondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

	// Keys and values end up on the kernel command line in single-boot mode and
	// in an iPXE script, where spaces, quotes and "$" would split arguments or be
	// expanded by iPXE; these patterns keep every real bonding option legal.
	bondKeyPattern   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	bondValuePattern = regexp.MustCompile(`^[A-Za-z0-9._:,/+-]{1,128}$`)
	digitsPattern    = regexp.MustCompile(`^[0-9]+$`)
)

// NormalizeBondOptions validates the pool's managementBondingOptions and fills
// the installer's defaults: mode active-backup and, unless ARP monitoring is
// chosen, miimon 100. The installer applies these defaults only when the map is
// absent, so a pool that sets just a mode would otherwise get a bond with no
// link monitoring, which never fails over. The input is not modified.
func NormalizeBondOptions(in map[string]string) (map[string]string, error) {
	if len(in) > maxBondOptions {
		return nil, fmt.Errorf("%w: %d options given, at most %d allowed", ErrInvalidBondOptions, len(in), maxBondOptions)
	}
	out := make(map[string]string, len(in)+2)
	for _, key := range slices.Sorted(maps.Keys(in)) {
		value := strings.TrimSpace(in[key])
		if !bondKeyPattern.MatchString(key) {
			return nil, fmt.Errorf("%w: option name %q must be lowercase letters, digits and underscores", ErrInvalidBondOptions, key)
		}
		if !bondValuePattern.MatchString(value) {
			return nil, fmt.Errorf("%w: option %s has value %q; use letters, digits and . _ : , / + - only", ErrInvalidBondOptions, key, value)
		}
		out[key] = value
	}
	if _, ok := out[BondOptionMode]; !ok {
		out[BondOptionMode] = DefaultBondMode
	}
	if !slices.Contains(bondModes, out[BondOptionMode]) {
		return nil, fmt.Errorf("%w: unknown mode %q; use one of %s", ErrInvalidBondOptions, out[BondOptionMode], strings.Join(bondModes, ", "))
	}
	_, miimon := out[BondOptionMiimon]
	_, arp := out[BondOptionARPInterval]
	if !miimon && !arp {
		out[BondOptionMiimon] = DefaultBondMiimon
	}
	if miimon && !digitsPattern.MatchString(out[BondOptionMiimon]) {
		return nil, fmt.Errorf("%w: miimon %q must be a number of milliseconds", ErrInvalidBondOptions, out[BondOptionMiimon])
	}
	return out, nil
}
