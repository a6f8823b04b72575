package common

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
)

// DriftMarker notes that a joined Instance's device is gone, for the
// Instance's pass, the one writer of its status, to store.
type DriftMarker interface {
	MarkDeviceGone(inst *equinixv1.Instance) error
}

// NodeFacts gives the hardware facts of an Instance's machine that its
// Node lacks, so that a new Node gets its labels, annotations and facts in
// one patch; ok is false when they cannot be read now, and the hardware
// steps put them on themselves.
type NodeFacts interface {
	NodeFacts(inst *equinixv1.Instance, node *corev1.Node) (labels, annotations map[string]*string, ok bool)
}

// BootClaims are the open claims the boot endpoint serves.
type BootClaims = bootendpoint.Claims

// BootServer serves the boot endpoint's handler until ctx ends.
type BootServer interface {
	Serve(ctx context.Context, handler http.Handler) error
}
