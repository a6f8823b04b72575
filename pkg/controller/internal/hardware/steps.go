package hardware

import (
	"context"
	"errors"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// Steps are the kit's steps (a machine's events, its facts, a reclaim
// notice, power requests) and what they read and write besides their
// target. They work on any Target: the pass over an Instance of Equinix
// Metal runs them, and so does the Inventories' (package inventory).
type Steps struct {
	ctx      context.Context
	settings StepSettings
	nodes    corecontrollers.NodeController
	// written are the chains' latest writes of Nodes.
	written  *common.NodeWrites
	events   typedcorev1.EventsGetter
	versions Versions
	// healthNodes are the nodes the targets' hardware series name.
	healthNodes *healthNodes
}

// StepSettings are the parts of the configuration the steps read.
type StepSettings struct {
	// PollInterval paces a power request under way; MetalTimeout bounds
	// one call, and twice it is how long a call whose answer was lost may
	// still land.
	PollInterval, MetalTimeout time.Duration
}

// Versions reads the cluster's Harvester version (a joininfo.Resolver),
// which a reclaim notice needs: it puts the node into maintenance mode
// where the release has it, and cordons it where it has not.
type Versions interface {
	Version(override string) (string, error)
}

// NoReclaims is the Versions of a chain whose machines no provider takes
// back (a BMC's facts carry no termination time): should one ever be, its
// node is cordoned, as when the version cannot be read.
var NoReclaims Versions = noVersions{}

type noVersions struct{}

func (noVersions) Version(string) (string, error) {
	return "", errors.New("this chain reads no cluster version")
}

// NewSteps builds the steps from what setup shares; versions is the
// cluster's version for reclaim notices.
func NewSteps(ctx context.Context, deps *common.Deps, versions Versions) *Steps {
	return &Steps{
		ctx:      ctx,
		settings: StepSettings{PollInterval: deps.Cfg.PollInterval, MetalTimeout: deps.Cfg.MetalTimeout},
		nodes:    deps.Nodes(),
		written:  deps.NodeWrites(),
		events:   deps.MachineEvents(),
		versions: versions,

		healthNodes: newHealthNodes(),
	}
}

// Sync runs the steps over t, whose machine is m and whose node is node
// (nil while there is none), at now; the machine's events are written
// at once. Only a failure of the cluster or of the machine is returned:
// what the steps found is in t's status and conditions.
func (s *Steps) Sync(t Target, m machine.Machine, node *corev1.Node, now time.Time) error {
	return (&run{Target: t, s: s, machine: m, node: node, now: now}).sync()
}

// SyncThrough is Sync whose machine events are written by o, off the
// caller's workers, under t's name.
func (s *Steps) SyncThrough(o *Outbox, t Target, m machine.Machine, node *corev1.Node, now time.Time) error {
	return (&run{Target: t, s: s, machine: m, node: node, now: now, outbox: o}).sync()
}

// NewOutbox is an outbox for these steps' Events; onWritten re-runs the
// owner of a key whose events are all written. It writes once started.
func (s *Steps) NewOutbox(onWritten func(key string)) *Outbox {
	return newOutbox(s.ctx, s.postEvent, onWritten)
}
