package equinixmetal

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/metaldriver"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// indexByDevice indexes Instances by their device ID, to hand a device's
// news to its Instance.
const indexByDevice = "equinix.harvesterhci.io/instances-by-device"

// deviceHardware is what Seeder's embedded mode gives on-prem nodes, for
// the devices: the hardware kit's Steps (package internal/hardware: facts
// on the Node, the device's events as Kubernetes Events, power requests,
// reclaim notices, health), run at the end of each pass over an Instance
// whose device is known, with the device as its machine (package
// metaldriver: one event list per project and interval for every device).
// The Instances' machine Events are written by the kit's outbox, off their
// workers.
type deviceHardware struct {
	steps       *hardware.Steps
	driver      *metaldriver.Driver
	outbox      *hardware.Outbox
	instances   equinixcontrollers.InstanceController
	nodes       corecontrollers.NodeCache
	nodeWrites  *common.NodeWrites
	credentials *credentials.Resolver
}

// newDeviceHardware builds the devices' hardware on api, starting nothing.
func newDeviceHardware(ctx context.Context, deps *common.Deps, api metal.Provider) *deviceHardware {
	cfg := deps.Cfg
	h := &deviceHardware{
		steps:     hardware.NewSteps(ctx, deps, deps.JoinInfo()),
		instances: deps.Instances(), nodes: deps.Nodes().Cache(), nodeWrites: deps.NodeWrites(), credentials: deps.Credentials(),
	}
	h.driver = metaldriver.New(metaldriver.Options{
		Provider:            api,
		Plans:               deps.Plans(),
		EventsInterval:      off(cfg.DeviceEventsInterval),
		TerminationInterval: off(cfg.TerminationCheckInterval),
		Store:               &logPositions{configMaps: deps.ConfigMaps(), namespace: cfg.Namespace},
		Notify:              h.wake,
	})
	h.outbox = h.steps.NewOutbox(deps.Instances().Enqueue)
	return h
}

// start runs the Metal driver's poll, which wakes the Instances whose
// devices have news, and the outbox, which wakes an Instance once its
// events are written, to store its cursor.
func (h *deviceHardware) start(ctx context.Context) {
	h.instances.Cache().AddIndexer(indexByDevice, func(i *equinixv1.Instance) ([]string, error) {
		if i.Status.InstanceID == "" {
			return nil, nil
		}
		return []string{i.Status.InstanceID}, nil
	})
	h.outbox.Start()
	go h.driver.Run(ctx, h.projects)
}

// off maps the configuration's 0 (off) onto the driver's negative.
func off(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// tendHardware runs the hardware steps on the pass, once the device is
// known, with credentials of its project: its events (only they while the
// Instance is being deleted), then what the node shows, the facts and a
// reclaim notice, then power. A device found gone is left to the pool.
func (r *run) tendHardware() error {
	st := r.Obj.Status
	if st.InstanceID == "" || st.ProjectID == "" || st.DeviceState == "deleted" {
		return nil
	}
	h := r.p.hardware
	creds, err := h.credentials.For(r.Obj.Spec.CredentialsSecret)
	if err != nil || creds.ProjectID != st.ProjectID {
		// CredentialsReady says why; the Secret's watch brings the
		// Instance back.
		return nil
	}
	// A device's node bears its Instance's name.
	node, err := h.nodes.Get(r.Obj.Name)
	node = h.nodeWrites.Latest(node)
	switch {
	case apierrors.IsNotFound(err):
		node = nil
	case err != nil:
		return err
	case !common.OwnedNode(node, r.Obj):
		node = nil
	}
	t := &instanceTarget{hardware.ObjectPass[*equinixv1.Instance, equinixv1.InstanceStatus]{Pass: r.Pass.Pass, Kind: "Instance"}}
	m := h.driver.Machine(creds, metaldriver.Device{ID: st.InstanceID, Plan: r.Obj.Spec.Plan})
	return h.steps.SyncThrough(h.outbox, t, m, node, r.Now())
}

// forget drops what the steps keep of a deleted Instance.
func (h *deviceHardware) forget(name string) {
	h.outbox.Drop(name)
	// An Instance's node bears its name.
	h.steps.ForgetTarget(name, name)
}

// instanceTarget is an Instance, as the hardware steps see it: the pass
// over it, whose power is declared (spec.powerState).
type instanceTarget struct {
	hardware.ObjectPass[*equinixv1.Instance, equinixv1.InstanceStatus]
}

func (t *instanceTarget) PowerSpec() equinixv1.PowerSpec       { return t.Obj.Spec.PowerSpec }
func (t *instanceTarget) Hardware() *hardwarev1.HardwareStatus { return &t.Obj.Status.HardwareStatus }
func (t *instanceTarget) Joined() bool                         { return t.Obj.Status.JoinedAt != nil }
func (t *instanceTarget) ForwardsEvents() bool                 { return true }

// PowerRecheck is the poll interval: the Metal API is built for it.
func (t *instanceTarget) PowerRecheck(poll time.Duration) time.Duration { return poll }

// NodeFacts returns the facts of an Instance's machine that its Node
// lacks, for the Node chain to add to the patch it makes when the Node
// appears: one patch per new Node rather than one from each chain. It
// costs no Metal call (the plans list is shared and hourly). ok is false
// when the facts cannot be read now; the pass's hardware steps put them on
// then.
func (p *Provider) NodeFacts(inst *equinixv1.Instance, node *corev1.Node) (labels, annotations map[string]*string, ok bool) {
	h := p.hardware
	if inst.Status.InstanceID == "" || inst.Status.ProjectID == "" || inst.Status.DeviceState == "deleted" {
		return nil, nil, false
	}
	creds, err := h.credentials.For(inst.Spec.CredentialsSecret)
	if err != nil || creds.ProjectID != inst.Status.ProjectID {
		return nil, nil, false
	}
	facts, err := h.driver.Machine(creds, metaldriver.Device{ID: inst.Status.InstanceID, Plan: inst.Spec.Plan}).Facts(p.ctx)
	if err != nil {
		return nil, nil, false
	}
	labels, annotations = hardware.FactsDiff(facts, node)
	return labels, annotations, true
}

// projects lists the Metal projects the addon's servers live in, each with
// credentials that reach it, for the driver's poll. A project counts while
// an Instance has a device there; it is watched for termination times
// while one of them is a spot server.
func (h *deviceHardware) projects() []metaldriver.Project {
	insts, err := h.instances.Cache().List(labels.Everything())
	if err != nil {
		return nil
	}
	byID := map[string]metaldriver.Project{}
	for _, inst := range insts {
		project := inst.Status.ProjectID
		if inst.Status.InstanceID == "" || project == "" {
			continue
		}
		p, seen := byID[project]
		if !seen {
			creds, err := h.credentials.For(inst.Spec.CredentialsSecret)
			if err != nil || creds.ProjectID != project {
				// Its Secret names another project now: the Instance's
				// own conditions say so; another Instance of the
				// project may still reach it.
				continue
			}
			p.Credentials = creds
		}
		p.WatchTerminations = p.WatchTerminations || inst.Spec.Spot != nil
		byID[project] = p
	}
	out := make([]metaldriver.Project, 0, len(byID))
	for _, p := range byID {
		out = append(out, p)
	}
	return out
}

// wake re-runs the Instances of devices with news.
func (h *deviceHardware) wake(deviceIDs []string) {
	for _, id := range deviceIDs {
		insts, err := h.instances.Cache().GetByIndex(indexByDevice, id)
		if err != nil {
			continue
		}
		for _, inst := range insts {
			h.instances.EnqueueAfter(inst.Name, 0)
		}
	}
}
