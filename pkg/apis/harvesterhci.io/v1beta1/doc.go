// Package v1beta1 names the Harvester kinds (harvesterhci.io/v1beta1) the addon
// reads. They are Harvester's own types; pkg/codegen generates the typed client,
// cache and controller for them into pkg/generated.
package v1beta1
