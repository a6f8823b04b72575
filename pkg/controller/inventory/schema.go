package inventory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// inventorySchema checks that the live Inventory CRD has every field of the
// addon's: one CRD name has had two schemas. Helm creates the chart's CRD
// only when none exists and never updates it, and Seeder applies its own
// (without caBundle, systemID, timeout or status.hardware): with Seeder's
// schema live, the apiserver drops those fields from every write, the
// event cursor among them, and events are forwarded again at every poll.
// While Seeder does not run, a CRD lacking fields is given the addon's
// schema (its metadata, Seeder's object-set marks among them, is kept, so
// a Seeder started again applies its own schema back: more fields than it
// knows never harm it). When that cannot be done (Seeder runs, or the
// update is refused) the Inventories get the condition SchemaCurrent
// False, a Warning Event on the CRD says which fields are missing, and
// equinix_addon_inventory_schema_outdated is 1, which an alert reads:
// never a silent loss.
type inventorySchema struct {
	crds     apiextv1client.CustomResourceDefinitionInterface
	recorder record.EventRecorder
	// want is the addon's CRD, embedded.
	want *apiextv1.CustomResourceDefinition

	now func() time.Time

	mu sync.Mutex
	// lacking are the fields the live CRD lacks, at the last check.
	lacking []string
	// complete says the last check found every field, and since when the
	// CRD has had them (its last change); false while unknown (before the
	// first check, and while Seeder runs and may apply its own).
	complete      bool
	completeSince time.Time
	// told is the list last told in an Event.
	told string
	// wrote is the CRD's generation after the addon's update; seederBack
	// is when a later generation, with Seeder's schema again, was seen:
	// Seeder re-applies its CRDs at start, before it takes its Lease.
	wrote      int64
	seederBack time.Time
}

// schemaSettle is how long after the live CRD changed its schema the
// addon holds the writes that must keep the fields it gained. An
// apiserver serves a changed schema only once its own watch of CRDs has
// brought the change (each apiserver of an HA control plane on its own),
// and the storage of the old one goes on answering the requests and
// watches it has until they end: writes in between still lose
// status.hardware, a power request's record among them, and a command
// whose record is lost would be sent again.
const schemaSettle = 15 * time.Second

// seederStartGrace is how long a Seeder that applied its CRDs again is
// given to take its Lease before the addon takes the schema back: a new
// Seeder pod waits out the Lease its last pod left (15 s) first.
const seederStartGrace = 2 * time.Minute

func newInventorySchema(crds apiextv1client.CustomResourceDefinitionInterface, recorder record.EventRecorder) (*inventorySchema, error) {
	want := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(seederv1alpha1.InventoryCRD, want); err != nil {
		return nil, fmt.Errorf("reading the addon's Inventory CRD: %w", err)
	}
	return &inventorySchema{crds: crds, recorder: recorder, want: want, now: time.Now}, nil
}

// missing are the addon's fields the live CRD lacked at the last check.
func (s *inventorySchema) missing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lacking
}

// check reads the live CRD and, when it lacks fields and mayUpdate (Seeder
// does not run), gives it the addon's schema. It reports whether the CRD
// was updated (every Inventory should then be written again).
func (s *inventorySchema) check(ctx context.Context, mayUpdate bool) (bool, error) {
	live, err := s.crds.Get(ctx, seederv1alpha1.InventoryCRDName, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", seederv1alpha1.InventoryCRDName, err)
	}
	lacking := missingFields(s.want, live)
	if len(lacking) == 0 {
		s.set(nil)
		s.completed(lastChange(live))
		return false, nil
	}
	why := "Harvester Seeder runs and owns it"
	if mayUpdate && s.seederStarting(live) {
		mayUpdate = false
		why = fmt.Sprintf("Seeder applied its own schema again after the addon's: it is starting, and is given %s to take its Lease", seederStartGrace)
	}
	if mayUpdate {
		err = s.update(ctx, live, lacking)
		if err == nil {
			s.set(nil)
			s.completed(s.now())
			return true, nil
		}
		logrus.Warnf("giving CRD %s the addon's schema: %v", live.Name, err)
		why = "updating it failed: " + err.Error()
	}
	s.set(lacking)
	list := strings.Join(lacking, ", ")
	s.mu.Lock()
	tell := s.told != list
	s.told = list
	s.mu.Unlock()
	if tell {
		s.recorder.Event(crdObject(live), corev1.EventTypeWarning, equinixv1.ReasonInventorySchemaOutdated, schemaMessage(lacking, why))
	}
	return false, nil
}

// seederStarting reports whether Seeder applied its schema over the
// addon's since the addon's update, less than seederStartGrace ago.
func (s *inventorySchema) seederStarting(live *apiextv1.CustomResourceDefinition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == 0 || live.Generation <= s.wrote ||
		live.Annotations[seederv1alpha1.SeederCRDOwnerAnnotation] != seederv1alpha1.SeederCRDOwnerID {
		return false
	}
	if s.seederBack.IsZero() {
		s.seederBack = s.now()
	}
	return s.now().Sub(s.seederBack) < seederStartGrace
}

// completed records that the live CRD has every field, and has had since
// changed: the time of its last change, unless it was complete already.
func (s *inventorySchema) completed(changed time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.complete {
		s.complete, s.completeSince = true, changed
	}
}

// forget makes the schema unknown until the next check: Seeder runs, and
// applies its own schema when it starts.
func (s *inventorySchema) forget() {
	s.mu.Lock()
	s.complete = false
	s.mu.Unlock()
}

// settling is how long writes that must keep the addon's fields are still
// to wait: schemaRecheck while the schema is unknown or lacks fields, the
// rest of schemaSettle after it changed, 0 once it is settled.
func (s *inventorySchema) settling(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.complete {
		return schemaRecheck
	}
	// Within [0, schemaSettle]: a change stamped by an apiserver whose
	// clock runs ahead holds no longer.
	return min(max(s.completeSince.Add(schemaSettle).Sub(now), 0), schemaSettle)
}

// lastChange is when crd was last changed, as the apiserver recorded it
// (the latest time of its managed fields; its creation without them): a
// controller that starts just after Seeder's or a person's change of the
// schema still waits for it to settle, and one that finds it long settled
// does not wait at all.
func lastChange(crd *apiextv1.CustomResourceDefinition) time.Time {
	last := crd.CreationTimestamp.Time
	for _, f := range crd.ManagedFields {
		if f.Time != nil && f.Time.After(last) {
			last = f.Time.Time
		}
	}
	return last
}

func (s *inventorySchema) set(lacking []string) {
	s.mu.Lock()
	s.lacking = lacking
	if lacking == nil {
		s.told = ""
	} else {
		s.complete = false
	}
	s.mu.Unlock()
	if lacking == nil {
		metrics.InventorySchemaOutdated.Set(0)
		return
	}
	metrics.InventorySchemaOutdated.Set(1)
}

func schemaMessage(lacking []string, why string) string {
	return fmt.Sprintf("the live CRD %s lacks the addon's fields %s (%s): the apiserver drops them from every write "+
		"(an Inventory's caBundle, systemID and timeout are lost, and its event cursor, so events are forwarded again); "+
		"apply the chart's crds/%s", seederv1alpha1.InventoryCRDName, strings.Join(lacking, ", "), why, "metal.harvesterhci.io_inventories.yaml")
}

// update gives the live CRD the addon's spec, keeping its metadata.
func (s *inventorySchema) update(ctx context.Context, live *apiextv1.CustomResourceDefinition, lacking []string) error {
	next := live.DeepCopy()
	next.Spec = *s.want.Spec.DeepCopy()
	updated, err := s.crds.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating CRD %s: %w", live.Name, err)
	}
	s.mu.Lock()
	s.wrote, s.seederBack = updated.Generation, time.Time{}
	s.mu.Unlock()
	owner := "an earlier release's"
	if live.Annotations[seederv1alpha1.SeederCRDOwnerAnnotation] == seederv1alpha1.SeederCRDOwnerID {
		owner = "Seeder's"
		metrics.SeederLeftoversTakenOver.WithLabelValues(leftoverSchema).Inc()
	}
	msg := fmt.Sprintf("gave CRD %s the addon's schema: %s lacked %s, which the apiserver would have dropped from every write",
		live.Name, owner, strings.Join(lacking, ", "))
	logrus.Info(msg)
	s.recorder.Event(crdObject(live), corev1.EventTypeNormal, equinixv1.ReasonInventorySchemaTakenOver, msg)
	return nil
}

func crdObject(crd *apiextv1.CustomResourceDefinition) *metav1.PartialObjectMetadata {
	return crdRef(&metav1.PartialObjectMetadata{ObjectMeta: crd.ObjectMeta})
}

// missingFields lists the field paths of want's served versions that have
// no place in live's (a version missing altogether counts as its root).
func missingFields(want, live *apiextv1.CustomResourceDefinition) []string {
	var out []string
	for _, wv := range want.Spec.Versions {
		var lv *apiextv1.CustomResourceDefinitionVersion
		for i := range live.Spec.Versions {
			if live.Spec.Versions[i].Name == wv.Name {
				lv = &live.Spec.Versions[i]
			}
		}
		if lv == nil || lv.Schema == nil || lv.Schema.OpenAPIV3Schema == nil {
			out = append(out, wv.Name)
			continue
		}
		if wv.Schema == nil || wv.Schema.OpenAPIV3Schema == nil {
			continue
		}
		out = append(out, lackingProps(wv.Schema.OpenAPIV3Schema, lv.Schema.OpenAPIV3Schema, "")...)
	}
	sort.Strings(out)
	return out
}

// lackingProps walks the properties (and array items) of want and names
// each that live has no place for; a live node that keeps unknown fields
// has a place for everything under it.
func lackingProps(want, live *apiextv1.JSONSchemaProps, path string) []string {
	if live.XPreserveUnknownFields != nil && *live.XPreserveUnknownFields {
		return nil
	}
	var out []string
	for name := range want.Properties {
		wp := want.Properties[name]
		lp, ok := live.Properties[name]
		p := strings.TrimPrefix(path+"."+name, ".")
		if !ok {
			out = append(out, p)
			continue
		}
		out = append(out, lackingProps(&wp, &lp, p)...)
	}
	if want.Items != nil && want.Items.Schema != nil && live.Items != nil && live.Items.Schema != nil {
		out = append(out, lackingProps(want.Items.Schema, live.Items.Schema, path+"[]")...)
	}
	return out
}

// schemaCondition says on the Inventory whether the live CRD can hold
// everything the addon writes: SchemaCurrent False while fields are
// missing, and no such condition otherwise.
func (h *Handler) schemaCondition(t *target) {
	if h.schema == nil {
		return
	}
	if lacking := h.schema.missing(); len(lacking) > 0 {
		t.SetCondition(equinixv1.InventorySchemaCurrent, metav1.ConditionFalse, equinixv1.ReasonInventorySchemaOutdated,
			schemaMessage(lacking, "the addon could not give it its schema"))
		return
	}
	conds := t.Obj.Status.Conditions
	for i := range conds {
		if conds[i].Type == equinixv1.InventorySchemaCurrent {
			t.Obj.Status.Conditions = append(conds[:i:i], conds[i+1:]...)
			return
		}
	}
}
