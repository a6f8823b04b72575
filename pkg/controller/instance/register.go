// Package instance is the Instance chain: it runs an Instance through the
// lifecycle of a server, from nothing to a Ready Harvester node and back
// to nothing, asking the mode's provider (package provision) for each step
// only it can take. The chain itself follows the node, drains it before
// the release (maintenance mode), keeps the console password and is the
// one writer of the Instance's status.
package instance

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
)

// indexByNode indexes Instances by the name of their node, so that a
// deleted Node, which arrives with its name only, finds its Instance.
const indexByNode = "equinix.harvesterhci.io/instances-by-node"

// Settings are the parts of the configuration the chain reads.
type Settings struct {
	// Namespace holds the console-password Secrets.
	Namespace string
	// PollInterval paces waiting states.
	PollInterval time.Duration
}

// Handler holds the chain and what it reads and writes.
type Handler struct {
	// ctx ends when the controller stops; a drain's calls use it.
	ctx      context.Context
	settings Settings
	provider provision.Provider

	instances equinixcontrollers.InstanceController
	// written are the chain's own latest writes of Instances (see latest).
	written *common.Writes[*equinixv1.Instance]
	pools   equinixcontrollers.InstancePoolCache
	nodes   corecontrollers.NodeController
	// nodeWrites are the chains' latest writes of Nodes (a maintenance
	// request), which the Node cache shows a moment later.
	nodeWrites   *common.NodeWrites
	secrets      corecontrollers.SecretController
	secretLookup *credentials.Lookup
	k8s          kubernetes.Interface
	joinInfo     *joininfo.Resolver
	recorder     record.EventRecorder
	// now is the chain's clock (time.Now when nil).
	now func() time.Time
}

// Register wires the chain for the provider's Instances, under the
// provider's names. The remove handler is registered first: it adds the
// finalizer, and no provider call may happen before the finalizer is
// stored, or a crash right after a create would leave a paid device
// nothing deletes.
func Register(ctx context.Context, deps *common.Deps, p provision.Provider) {
	h := &Handler{
		ctx:      ctx,
		settings: Settings{Namespace: deps.Cfg.Namespace, PollInterval: deps.Cfg.PollInterval},
		provider: p,

		instances: deps.Instances(), written: deps.InstanceWrites(),
		pools: deps.Pools().Cache(), nodes: deps.Nodes(), nodeWrites: deps.NodeWrites(),
		secrets: deps.Secrets(), secretLookup: deps.SecretLookup(), k8s: deps.K8s(), joinInfo: deps.JoinInfo(), recorder: deps.Recorder(),
	}
	names := p.Names()
	handles := func(i *equinixv1.Instance) bool { return p.Handles(&i.Spec.InstanceTemplate) }
	deps.Instances().Cache().AddIndexer(indexByNode, func(i *equinixv1.Instance) ([]string, error) {
		if name := i.NodeName(); name != "" {
			return []string{name}, nil
		}
		return nil, nil
	})
	common.OnRemoveWhere(ctx, deps.Instances(), names.InstanceRemove(), handles, h.RemoveInstance)
	common.OnChangeWhere(ctx, deps.Instances(), names.InstanceProvision(), handles, h.ProvisionInstance)
	relatedresource.WatchClusterScoped(ctx, names.Instance+"-watch-nodes", h.instancesOfNode, common.After(deps.Instances(), common.RelatedDelay), deps.Nodes())
}

// instancesOfNode maps a Node to the Instance it was installed for, by its
// label; a deleted Node, which arrives as nil with its name only, to the
// Instance of that name and those whose node it was.
func (h *Handler) instancesOfNode(_, name string, obj runtime.Object) ([]relatedresource.Key, error) {
	if node, ok := obj.(*corev1.Node); ok && node != nil {
		if inst, ok := node.Labels[equinixv1.LabelInstance]; ok {
			return []relatedresource.Key{{Name: inst}}, nil
		}
		return nil, nil
	}
	keys := []relatedresource.Key{{Name: name}}
	insts, err := h.instances.Cache().GetByIndex(indexByNode, name)
	if err != nil {
		return nil, err
	}
	for _, inst := range insts {
		if inst.Name != name {
			keys = append(keys, relatedresource.Key{Name: inst.Name})
		}
	}
	return keys, nil
}
