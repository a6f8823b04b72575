package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
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
// besides at start: two reads of CRD metadata.
const DefaultSeederCheck = time.Minute

// CRDMetadata reads a CustomResourceDefinition's metadata by name.
type CRDMetadata func(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error)

// seederGuard keeps the chain off the Inventories while Harvester's own
// Seeder is installed: both would act on them (two BMC sessions, two
// commands per power request). Seeder applies its CRDs itself and marks
// them with its object set's ID; it also brings Tinkerbell's rufio
// machines, which nothing else installs in a Harvester cluster. Either
// found, no Inventory is reconciled; a Warning Event says so on the CRD
// and once on each Inventory, a log line and the metric
// equinix_addon_seeder_installed too. Once both are gone, every Inventory
// runs again.
type seederGuard struct {
	crds     CRDMetadata
	recorder record.EventRecorder
	onGone   func()

	mu    sync.Mutex
	found string
	// told are the Inventories told while this finding lasts.
	told map[types.UID]bool
}

func newSeederGuard(crds CRDMetadata, recorder record.EventRecorder, onGone func()) *seederGuard {
	return &seederGuard{crds: crds, recorder: recorder, onGone: onGone, told: map[types.UID]bool{}}
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

// present reports whether Seeder was found at the last check.
func (g *seederGuard) present() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.found != ""
}

// check looks for Seeder and acts on a change. A failed look changes
// nothing: the next one tells.
func (g *seederGuard) check(ctx context.Context) {
	found, crd, err := g.look(ctx)
	if err != nil {
		logrus.Warnf("looking for Harvester Seeder: %v", err)
		return
	}
	g.mu.Lock()
	was := g.found
	g.found = found
	if found == "" {
		g.told = map[types.UID]bool{}
	}
	g.mu.Unlock()
	switch {
	case found != "" && was == "":
		metrics.SeederInstalled.Set(1)
		logrus.Warnf("Harvester Seeder is installed (%s): it serves the Inventories, so this controller leaves them all alone", found)
		g.recorder.Event(crd, corev1.EventTypeWarning, equinixv1.ReasonSeederInstalled, seederMessage(found))
	case found == "" && was != "":
		metrics.SeederInstalled.Set(0)
		logrus.Infof("Harvester Seeder is gone: serving the Inventories again")
		g.onGone()
	case found == "":
		metrics.SeederInstalled.Set(0)
	}
}

// tell puts a Warning Event on an Inventory, once while the finding lasts.
func (g *seederGuard) tell(inv *seederv1alpha1.Inventory) {
	g.mu.Lock()
	found, told := g.found, g.told[inv.UID]
	g.told[inv.UID] = true
	g.mu.Unlock()
	if !told {
		g.recorder.Event(inv, corev1.EventTypeWarning, equinixv1.ReasonSeederInstalled, seederMessage(found))
	}
}

func seederMessage(found string) string {
	return fmt.Sprintf("Harvester Seeder is installed (%s) and serves the Inventories: the addon leaves them untouched. "+
		"Run one of the two: disable Seeder, or the addon's harvester-seeder install", found)
}

// look says what tells Seeder is installed ("" when nothing does), and the
// CRD that tells it, for the Event.
func (g *seederGuard) look(ctx context.Context) (string, *metav1.PartialObjectMetadata, error) {
	inv, err := g.crds(ctx, seederv1alpha1.InventoryCRDName)
	switch {
	case err == nil && inv.Annotations[seederv1alpha1.SeederCRDOwnerAnnotation] == seederv1alpha1.SeederCRDOwnerID:
		return fmt.Sprintf("CRD %s carries %s=%s: Seeder applied it", seederv1alpha1.InventoryCRDName,
			seederv1alpha1.SeederCRDOwnerAnnotation, seederv1alpha1.SeederCRDOwnerID), crdRef(inv), nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", nil, fmt.Errorf("reading CRD %s: %w", seederv1alpha1.InventoryCRDName, err)
	}
	machines, err := g.crds(ctx, seederv1alpha1.RufioMachinesCRD)
	switch {
	case err == nil:
		return fmt.Sprintf("CRD %s exists: Seeder's BMC machines", seederv1alpha1.RufioMachinesCRD), crdRef(machines), nil
	case apierrors.IsNotFound(err):
		return "", nil, nil
	}
	return "", nil, fmt.Errorf("reading CRD %s: %w", seederv1alpha1.RufioMachinesCRD, err)
}

// crdRef is a CRD as an Event names it.
func crdRef(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	out := m.DeepCopy()
	out.APIVersion, out.Kind = seederv1alpha1.CRDAPIVersion, seederv1alpha1.CRDKind
	return out
}
