// Package devicehardware is the hardware chain of Equinix Metal devices
// (--mode equinix): what Seeder's embedded mode gives on-prem nodes, for
// the servers the addon provisioned in Equinix Metal. It runs the hardware
// kit's Steps (package internal/hardware: facts on the Node, the device's
// events as Kubernetes Events, power requests, reclaim notices, health) on
// each Instance whose device is known, with the device as its machine
// (package metaldriver: one event list per project and interval for every
// device), and writes the Instances' machine Events through the kit's
// outbox, off their workers.
package devicehardware

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/metaldriver"
)

// Handler names; no remove handler, so nothing is persisted under them.
const (
	HandlerInstance = "instance-hardware"
	watchNodes      = "hardware-watch-nodes"

	// indexByDevice indexes Instances by their device ID, to hand a
	// device's news to its Instance.
	indexByDevice = "equinix.harvesterhci.io/instances-by-device"
)

// Handler holds the chain for Instances and what it reads and writes.
type Handler struct {
	ctx       context.Context
	steps     *hardware.Steps
	instances equinixcontrollers.InstanceController
	nodes     corecontrollers.NodeController
	// written are the chains' latest writes of Nodes.
	written     *common.NodeWrites
	credentials *credentials.Resolver
	recorder    record.EventRecorder
	metal       *metaldriver.Driver
	// outbox writes the Instances' machine Events off their workers.
	outbox *hardware.Outbox

	// now is the chain's clock (time.Now when nil).
	now func() time.Time
}

// Register wires the chain: a handler on Instances, a watch that re-runs
// an Instance when its Node changes (maintenance mode lets a waiting power
// request go; the node to forward events to appears), and the Metal
// driver's poll, which wakes the Instances whose devices have news.
func Register(ctx context.Context, deps *common.Deps) error {
	h, err := shared(ctx, deps)
	if err != nil {
		return err
	}
	deps.Instances().Cache().AddIndexer(indexByDevice, func(i *equinixv1.Instance) ([]string, error) {
		if i.Status.InstanceID == "" {
			return nil, nil
		}
		return []string{i.Status.InstanceID}, nil
	})
	h.outbox.Start()
	common.OnChangeWhere(ctx, deps.Instances(), HandlerInstance, common.MetalInstance, h.SyncInstance)
	relatedresource.WatchClusterScoped(ctx, watchNodes, instanceOfNode, common.After(deps.Instances(), common.RelatedDelay), deps.Nodes())
	go h.metal.Run(ctx, h.projects)
	return nil
}

// NodeFacts is the chain's handler as the Node chain asks it for a new
// Node's facts.
func NodeFacts(ctx context.Context, deps *common.Deps) (common.NodeFacts, error) {
	return shared(ctx, deps)
}

// handlerKey names the chain's handler among the shared values of Deps.
type handlerKey struct{}

// shared is the chain's one handler: built, without starting anything, by
// the first of Register and NodeFacts to ask.
func shared(ctx context.Context, deps *common.Deps) (*Handler, error) {
	return common.Shared(deps, handlerKey{}, func() (*Handler, error) { return newHandler(ctx, deps) })
}

func newHandler(ctx context.Context, deps *common.Deps) (*Handler, error) {
	cfg := deps.Cfg
	provider, err := deps.Metal()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		ctx:         ctx,
		steps:       hardware.NewSteps(ctx, deps, deps.JoinInfo()),
		instances:   deps.Instances(),
		nodes:       deps.Nodes(),
		written:     deps.NodeWrites(),
		credentials: deps.Credentials(),
		recorder:    deps.Recorder(),
	}
	h.metal = metaldriver.New(metaldriver.Options{
		Provider:            provider,
		Plans:               deps.Plans(),
		EventsInterval:      off(cfg.DeviceEventsInterval),
		TerminationInterval: off(cfg.TerminationCheckInterval),
		Store:               &logPositions{configMaps: deps.ConfigMaps(), namespace: cfg.Namespace},
		Notify:              h.wake,
	})
	h.outbox = h.steps.NewOutbox(deps.Instances().Enqueue)
	return h, nil
}

// off maps the configuration's 0 (off) onto the driver's negative.
func off(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// instanceOfNode maps a Node to the Instance it was installed for.
func instanceOfNode(_, name string, obj runtime.Object) ([]relatedresource.Key, error) {
	node, ok := obj.(*corev1.Node)
	if !ok || node == nil {
		return []relatedresource.Key{{Name: name}}, nil
	}
	if inst, ok := node.Labels[equinixv1.LabelInstance]; ok {
		return []relatedresource.Key{{Name: inst}}, nil
	}
	return nil, nil
}

func (h *Handler) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}
