// Package node decorates the Nodes of the addon's servers with what Harvester
// users and the ecosystem read about the hardware: the provider ID (when the
// kubelet set none), device ID, plan, metro and facility (region and zone),
// billing cycle; and, in the same patch, the hardware chain's facts. With
// --initialize-nodes it also initializes Nodes registered with
// --cloud-provider=external, as the Equinix CCM would: their addresses from
// their device.
// It has no remove handler: a finalizer on every Node would make the addon a
// dependency of every node deletion in the cluster.
package node

import (
	"context"
	"fmt"
	"sync"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/nodedevice"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Handler names.
const (
	HandlerLabels     = "node-equinix-metadata"
	HandlerInitialize = "node-cloud-initialize"
)

// Handler holds the Node chain and what it reads and writes.
type Handler struct {
	nodes     corecontrollers.NodeClient
	written   *common.NodeWrites
	instances equinixcontrollers.InstanceCache
	facts     common.NodeFacts
}

// InitHandler initializes the Nodes that wait for an external cloud
// provider (--initialize-nodes).
type InitHandler struct {
	ctx         context.Context
	nodes       corecontrollers.NodeController
	written     *common.NodeWrites
	instances   equinixcontrollers.InstanceCache
	metal       metal.Provider
	credentials *credentials.Resolver
	matcher     *nodedevice.Matcher
	recorder    record.EventRecorder

	mu sync.Mutex
	// reported is the last problem told about each node.
	reported map[string]string
}

// Register wires the Node handlers.
func Register(ctx context.Context, deps *common.Deps) error {
	facts, err := deps.NodeFacts()
	if err != nil {
		return err
	}
	h := &Handler{nodes: deps.Nodes(), written: deps.NodeWrites(), instances: deps.Instances().Cache(), facts: facts}
	deps.Nodes().OnChange(ctx, HandlerLabels, h.LabelNode)
	if deps.Cfg.InitializeNodes {
		provider, err := deps.Metal()
		if err != nil {
			return err
		}
		i := &InitHandler{ctx: ctx, nodes: deps.Nodes(), written: deps.NodeWrites(), instances: deps.Instances().Cache(),
			metal: provider, credentials: deps.Credentials(), matcher: deps.Matcher(), recorder: deps.Recorder(), reported: map[string]string{}}
		deps.Nodes().OnChange(ctx, HandlerInitialize, i.InitializeNode)
	}
	return nil
}

// clientFor is the Metal client of the node's server: its Instance's
// credentials for the addon's own nodes, the default Secret's for others.
func (h *InitHandler) clientFor(node *corev1.Node) (metal.Client, *equinixv1.SecretReference, error) {
	var ref *equinixv1.SecretReference
	if name := node.Labels[equinixv1.LabelInstance]; name != "" && name == node.Name {
		if inst, err := h.instances.Get(name); err == nil {
			ref = inst.Spec.CredentialsSecret
		}
	}
	creds, err := h.credentials.For(ref)
	if cerr, ok := conditions.AsError(err); ok {
		_, rerr := h.notYet(node, cerr.Message)
		return nil, ref, rerr
	}
	if err != nil {
		return nil, ref, err
	}
	c, err := h.metal.Client(creds)
	if err != nil {
		return nil, ref, fmt.Errorf("building the Metal client: %w", err)
	}
	return c, ref, nil
}
