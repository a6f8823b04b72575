// Package addonspec keeps Harvester's harvester-seeder Addon pointed at the
// addon's chart across Harvester upgrades. Harvester's upgrade
// (package/upgrade/lib.sh upgrade_addon, run for harvester-seeder by
// upgrade_manifests.sh) merge-patches the Addon's spec.version and
// spec.valuesContent from the Seeder Addon it bundles and keeps spec.repo:
// the addon's repository is then asked for Seeder's chart version, the
// deploy fails, and the user's values are gone. The release that runs is
// untouched by the failed deploy, so its controller is still there to
// write the Addon's own version and values back; the deploy Harvester
// retries then succeeds, and Harvester's upgrade, which waits for it, goes
// on.
package addonspec

import (
	"context"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// DefaultCheck is how often the Addon is read: one GET by name.
const DefaultCheck = time.Minute

// Register starts the keeper of the harvester-seeder Addon (seeder mode
// only): a check at start, then one every DefaultCheck.
func Register(ctx context.Context, deps *common.Deps) error {
	interval := deps.Cfg.SeederCheckInterval
	if interval <= 0 {
		interval = DefaultCheck
	}
	k := newKeeper(deps.Addons(), deps.Recorder())
	k.check(ctx)
	go k.run(ctx, interval)
	return nil
}
