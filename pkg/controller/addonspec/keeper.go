package addonspec

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// AnnotationDesiredSpec holds, on the Addon, the repo, version and
// valuesContent that last deployed the addon's chart: what is written back
// when Harvester's upgrade replaces them. The values are the Addon's own
// (the chart takes no secret through them), copied on the same object.
const AnnotationDesiredSpec = "equinix.harvesterhci.io/desired-addon-spec"

// spec is the part of the Addon's spec Harvester's upgrade touches, with
// the repo it keeps.
type spec struct {
	Repo          string `json:"repo"`
	Version       string `json:"version"`
	ValuesContent string `json:"valuesContent"`
}

// keeper reads the Addon and writes its desired spec back after
// Harvester's upgrade step replaced it.
type keeper struct {
	addons   dynamic.ResourceInterface
	recorder record.EventRecorder
	// told is the overwritten spec last told without a record to restore.
	told spec
}

func newKeeper(addons dynamic.ResourceInterface, recorder record.EventRecorder) *keeper {
	return &keeper{addons: addons, recorder: recorder}
}

func (k *keeper) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.check(ctx)
		}
	}
}

// check reads the Addon and acts; a failure is logged, the next check
// tries again.
func (k *keeper) check(ctx context.Context) {
	if err := k.keep(ctx); err != nil {
		logrus.Warnf("keeping Addon %s/%s: %v", seederv1alpha1.SeederAddonNamespace, seederv1alpha1.SeederAddonName, err)
	}
}

// keep records the Addon's spec while it names the addon's chart and
// values, and writes the record back once Seeder's bundled values replaced
// them in the same repository (Harvester's upgrade keeps spec.repo; a user
// going back to Seeder points it at Harvester's own repository, and is left
// alone).
func (k *keeper) keep(ctx context.Context) error {
	addon, err := k.addons.Get(ctx, seederv1alpha1.SeederAddonName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading: %w", err)
	}
	now := specOf(addon)
	rec, hasRec := recorded(addon)
	if !seedersValues(now.ValuesContent) {
		if hasRec && rec == now {
			return nil
		}
		return k.record(ctx, addon, now)
	}
	switch {
	case !hasRec:
		k.tell(addon, now, "no earlier spec of the addon's chart was recorded on it, so it cannot be written back: apply the addon's harvester-seeder Addon manifest again")
		return nil
	case rec.Repo != now.Repo:
		// Pointed elsewhere with Seeder's values: the user went back to
		// Seeder.
		return nil
	}
	return k.restore(ctx, addon, now, rec)
}

// seedersValues reports whether valuesContent is the values Harvester
// bundles for Seeder's chart: only Seeder's image tag and fullnameOverride
// harvester-seeder, which no values of the addon's chart are.
func seedersValues(valuesContent string) bool {
	values := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(valuesContent), &values); err != nil {
		return false
	}
	if values["fullnameOverride"] != seederv1alpha1.SeederAddonName {
		return false
	}
	for key, v := range values {
		switch key {
		case "fullnameOverride":
		case "image":
			image, ok := v.(map[string]interface{})
			if !ok {
				return false
			}
			for k := range image {
				if k != "tag" {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

func specOf(addon *unstructured.Unstructured) spec {
	str := func(field string) string {
		v, _, _ := unstructured.NestedString(addon.Object, "spec", field)
		return v
	}
	return spec{Repo: str("repo"), Version: str("version"), ValuesContent: str("valuesContent")}
}

func recorded(addon *unstructured.Unstructured) (spec, bool) {
	raw, ok := addon.GetAnnotations()[AnnotationDesiredSpec]
	if !ok {
		return spec{}, false
	}
	var s spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return spec{}, false
	}
	return s, true
}

// record stores the spec in the Addon's annotation.
func (k *keeper) record(ctx context.Context, addon *unstructured.Unstructured, s spec) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return k.patch(ctx, addon, map[string]interface{}{"metadata": map[string]interface{}{
		"annotations": map[string]interface{}{AnnotationDesiredSpec: string(raw)}}})
}

// restore writes the recorded version and values back.
func (k *keeper) restore(ctx context.Context, addon *unstructured.Unstructured, now, rec spec) error {
	err := k.patch(ctx, addon, map[string]interface{}{"spec": map[string]interface{}{"version": rec.Version, "valuesContent": rec.ValuesContent}})
	if err != nil {
		return err
	}
	metrics.AddonSpecRestored.Inc()
	msg := fmt.Sprintf("Seeder's chart version %s and values replaced the addon's (Harvester's upgrade step does that to this Addon, "+
		"keeping its repo %s, which has no such version): wrote back version %s and the values that deployed the addon", now.Version, now.Repo, rec.Version)
	logrus.Warn(msg)
	k.recorder.Event(addon, corev1.EventTypeWarning, equinixv1.ReasonAddonSpecRestored, msg)
	return nil
}

// tell says, once per overwritten spec, that it cannot be written back.
func (k *keeper) tell(addon *unstructured.Unstructured, now spec, why string) {
	if k.told == now {
		return
	}
	k.told = now
	msg := fmt.Sprintf("Seeder's chart version %s and values are on this Addon, in repo %s: %s", now.Version, now.Repo, why)
	logrus.Warn(msg)
	k.recorder.Event(addon, corev1.EventTypeWarning, equinixv1.ReasonAddonSpecOverwritten, msg)
}

// patch merge-patches the Addon at the version read: a change made in
// between is read again at the next check.
func (k *keeper) patch(ctx context.Context, addon *unstructured.Unstructured, patch map[string]interface{}) error {
	meta, _ := patch["metadata"].(map[string]interface{})
	if meta == nil {
		meta = map[string]interface{}{}
		patch["metadata"] = meta
	}
	meta["resourceVersion"] = addon.GetResourceVersion()
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = k.addons.Patch(ctx, addon.GetName(), types.MergePatchType, raw, metav1.PatchOptions{})
	if apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching: %w", err)
	}
	return nil
}
