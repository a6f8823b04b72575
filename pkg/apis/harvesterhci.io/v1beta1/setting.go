package v1beta1

import (
	harvesterv1beta1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
)

// The Harvester kinds the addon reads are Harvester's own Go types, from the
// github.com/harvester/harvester module pinned in go.mod. The aliases keep the
// addon's import path, so nothing that reads them depends on where they live.

// Setting is Harvester's cluster-scoped settings.harvesterhci.io object. The
// addon reads `server-version` (EffectiveValue: value, else default) to pin the
// installer artifacts to the cluster's release.
type Setting = harvesterv1beta1.Setting

// SettingList is a list of Settings.
type SettingList = harvesterv1beta1.SettingList

// SchemeGroupVersion is harvesterhci.io/v1beta1.
var SchemeGroupVersion = harvesterv1beta1.SchemeGroupVersion
