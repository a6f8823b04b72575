package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// DefaultSeederCheck is how often the chain looks for the real Seeder,
// besides at start: a read of its Lease and of two CRDs' metadata.
const DefaultSeederCheck = time.Minute

// seederLeaseSkew is how much older than its duration Seeder's Lease may
// look and still count as renewed: the clocks of two nodes differ a little.
const seederLeaseSkew = 30 * time.Second

// CRDMetadata reads a CustomResourceDefinition's metadata by name.
type CRDMetadata func(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error)

// LeaseReader reads a Lease by namespace and name.
type LeaseReader func(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)

// seederState is what the guard found of Harvester's own Seeder.
type seederState int

const (
	// seederAbsent: nothing of Seeder in the cluster.
	seederAbsent seederState = iota
	// seederLeftovers: what Seeder leaves once its Addon is disabled (its
	// CRDs, its webhook, its finalizer on Inventories) but no Seeder
	// running: the addon serves the Inventories and takes the leftovers
	// over.
	seederLeftovers
	// seederRunning: Seeder's controller renews its Lease: it serves the
	// Inventories and the addon stands back.
	seederRunning
)

// seederGuard keeps the chain off the Inventories while Harvester's own
// Seeder runs: both would act on them (two BMC sessions, two commands per
// power request). Running is told by Seeder's leader-election Lease, which
// its controller renews every few seconds: its CRDs and webhook outlive it,
// and its Deployment shares its name with the addon's own. While it runs,
// no Inventory is reconciled; a Warning Event says so on the Inventory CRD
// and once on each Inventory, a log line and the metric
// equinix_addon_seeder_running too. Once it stops, every Inventory runs
// again and what it left is taken over (onCheck).
type seederGuard struct {
	crds     CRDMetadata
	leases   LeaseReader
	recorder record.EventRecorder
	// onServe runs when the Inventories are served again (Seeder
	// stopped), onCheck after every check that read what it needs.
	onServe func()
	onCheck func(ctx context.Context, state seederState)
	now     func() time.Time

	mu    sync.Mutex
	state seederState
	// found says what tells Seeder's state, for the Events.
	found string
	// renewed is the Lease's renew time at the last look: a change means
	// Seeder renewed it, whatever the clocks say.
	renewed time.Time
	// told are the Inventories told while Seeder runs.
	told map[types.UID]bool
}

func newSeederGuard(crds CRDMetadata, leases LeaseReader, recorder record.EventRecorder, onServe func(), onCheck func(context.Context, seederState)) *seederGuard {
	return &seederGuard{crds: crds, leases: leases, recorder: recorder, onServe: onServe, onCheck: onCheck,
		now: time.Now, told: map[types.UID]bool{}}
}

// run checks every interval until ctx ends.
func (g *seederGuard) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.check(ctx)
		}
	}
}

// present reports whether Seeder was found running at the last check.
func (g *seederGuard) present() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state == seederRunning
}

// leftovers reports whether the last check found what Seeder left, with
// Seeder no longer running.
func (g *seederGuard) leftovers() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state == seederLeftovers
}

// check looks for Seeder and acts on a change. A failed look changes
// nothing: the next one tells.
func (g *seederGuard) check(ctx context.Context) {
	state, found, crd, err := g.look(ctx)
	if err != nil {
		logrus.Warnf("looking for Harvester Seeder: %v", err)
		return
	}
	g.mu.Lock()
	was := g.state
	g.state, g.found = state, found
	if state != seederRunning {
		g.told = map[types.UID]bool{}
	}
	g.mu.Unlock()
	metrics.SeederRunning.Set(0)
	switch {
	case state == seederRunning && was != seederRunning:
		logrus.Warnf("Harvester Seeder is running (%s): it serves the Inventories, so this controller leaves them all alone", found)
		g.recorder.Event(crd, corev1.EventTypeWarning, equinixv1.ReasonSeederRunning, seederMessage(found))
	case state != seederRunning && was == seederRunning:
		logrus.Infof("Harvester Seeder stopped (%s): serving the Inventories again", found)
	}
	if state == seederRunning {
		metrics.SeederRunning.Set(1)
	}
	// What Seeder left (its schema first) is taken over before the
	// Inventories are woken.
	g.onCheck(ctx, state)
	if state != seederRunning && was == seederRunning {
		g.onServe()
	}
}

// tell puts a Warning Event on an Inventory, once while Seeder runs.
func (g *seederGuard) tell(inv *seederv1alpha1.Inventory) {
	g.mu.Lock()
	found, told := g.found, g.told[inv.UID]
	g.told[inv.UID] = true
	g.mu.Unlock()
	if !told {
		g.recorder.Event(inv, corev1.EventTypeWarning, equinixv1.ReasonSeederRunning, seederMessage(found))
	}
}

func seederMessage(found string) string {
	return fmt.Sprintf("Harvester Seeder is running (%s) and serves the Inventories: the addon leaves them untouched. "+
		"Run one of the two: disable Seeder, or the addon's harvester-seeder install", found)
}

// look says what it found of Seeder, why (for the Events), and the CRD the
// Events of a running Seeder go to.
func (g *seederGuard) look(ctx context.Context) (seederState, string, *metav1.PartialObjectMetadata, error) {
	inv, err := g.crds(ctx, seederv1alpha1.InventoryCRDName)
	switch {
	case apierrors.IsNotFound(err):
		inv = nil
	case err != nil:
		return 0, "", nil, fmt.Errorf("reading CRD %s: %w", seederv1alpha1.InventoryCRDName, err)
	}
	running, why, err := g.leaseRenewed(ctx)
	if err != nil {
		return 0, "", nil, err
	}
	if running {
		ref := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: seederv1alpha1.InventoryCRDName}}
		if inv != nil {
			ref = inv
		}
		return seederRunning, why, crdRef(ref), nil
	}
	if inv != nil && inv.Annotations[seederv1alpha1.SeederCRDOwnerAnnotation] == seederv1alpha1.SeederCRDOwnerID {
		return seederLeftovers, fmt.Sprintf("CRD %s carries %s=%s, and %s", seederv1alpha1.InventoryCRDName,
			seederv1alpha1.SeederCRDOwnerAnnotation, seederv1alpha1.SeederCRDOwnerID, why), nil, nil
	}
	_, err = g.crds(ctx, seederv1alpha1.RufioMachinesCRD)
	switch {
	case err == nil:
		return seederLeftovers, fmt.Sprintf("CRD %s exists, and %s", seederv1alpha1.RufioMachinesCRD, why), nil, nil
	case apierrors.IsNotFound(err):
		return seederAbsent, why, nil, nil
	}
	return 0, "", nil, fmt.Errorf("reading CRD %s: %w", seederv1alpha1.RufioMachinesCRD, err)
}

// leaseRenewed reports whether Seeder's controller holds and renews its
// leader-election Lease: renewed within its duration (and a little skew),
// or renewed since the last look.
func (g *seederGuard) leaseRenewed(ctx context.Context) (bool, string, error) {
	lease, err := g.leases(ctx, seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederLeaseName)
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Sprintf("Seeder's Lease %s/%s does not exist", seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederLeaseName), nil
	case err != nil:
		return false, "", fmt.Errorf("reading Seeder's Lease %s/%s: %w", seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederLeaseName, err)
	}
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || spec.RenewTime == nil {
		return false, fmt.Sprintf("Seeder's Lease %s/%s has no holder", lease.Namespace, lease.Name), nil
	}
	renew := spec.RenewTime.Time
	duration := 15 * time.Second
	if spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*spec.LeaseDurationSeconds) * time.Second
	}
	g.mu.Lock()
	changed := !g.renewed.IsZero() && !renew.Equal(g.renewed)
	g.renewed = renew
	g.mu.Unlock()
	age := g.now().Sub(renew)
	if changed || age < duration+seederLeaseSkew {
		return true, fmt.Sprintf("%s renews Seeder's Lease %s/%s", *spec.HolderIdentity, lease.Namespace, lease.Name), nil
	}
	return false, fmt.Sprintf("Seeder's Lease %s/%s was last renewed %s ago", lease.Namespace, lease.Name, age.Round(time.Second)), nil
}

// crdRef is a CRD as an Event names it.
func crdRef(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	out := m.DeepCopy()
	out.APIVersion, out.Kind = seederv1alpha1.CRDAPIVersion, seederv1alpha1.CRDKind
	return out
}
