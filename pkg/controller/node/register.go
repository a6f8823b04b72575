// Package node decorates the Nodes of the addon's servers with what Harvester
// users and the ecosystem read about the hardware: the provider ID (when the
// kubelet set none), device ID, plan, metro and facility (region and zone),
// billing cycle; and, in the same patch, the hardware chain's facts.
// It has no remove handler: a finalizer on every Node would make the addon a
// dependency of every node deletion in the cluster.
package node

import (
	"context"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// HandlerLabels names the Node handler.
const HandlerLabels = "node-equinix-metadata"

// Handler holds the Node chain and what it reads and writes.
type Handler struct {
	nodes     corecontrollers.NodeClient
	written   *common.NodeWrites
	instances equinixcontrollers.InstanceCache
	facts     Facts
}

// Facts gives the hardware facts of an Instance's machine that its Node
// lacks (the hardware chain's), so that a new Node gets its labels,
// annotations and facts in one patch; ok is false when they cannot be
// read now, and the hardware chain puts them on itself.
type Facts interface {
	NodeFacts(inst *v1.Instance, node *corev1.Node) (labels, annotations map[string]*string, ok bool)
}

// Register wires the Node handler.
func Register(ctx context.Context, deps *common.Deps, facts Facts) error {
	h := &Handler{nodes: deps.Nodes, written: deps.NodeWrites, instances: deps.Instances.Cache(), facts: facts}
	deps.Nodes.OnChange(ctx, HandlerLabels, h.LabelNode)
	return nil
}
