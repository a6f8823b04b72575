package v1alpha1

import _ "embed" // the Inventory CRD, for the controller's schema check

// InventoryCRD is the addon's Inventory CRD, the same bytes as the chart's
// crds/ (pkg/codegen writes both). The hardware mode checks the live CRD
// against it at start and gives it this schema when it lacks the addon's
// fields: Helm creates a CRD of crds/ only when absent and never updates
// it, and Seeder applies its own under the same name.
//
//go:embed inventory_crd.yaml
var InventoryCRD []byte
