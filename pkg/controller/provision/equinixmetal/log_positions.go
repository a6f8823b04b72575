package equinixmetal

import (
	"fmt"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// logPositions is the Metal driver's LogPositionStore on that ConfigMap.
type logPositions struct {
	configMaps corecontrollers.ConfigMapController
	namespace  string
}

// Load reads a project's log position from the cache.
func (p *logPositions) Load(project string) (time.Time, bool, error) {
	cm, err := p.configMaps.Cache().Get(p.namespace, equinixv1.ConfigMapDeviceEvents)
	if apierrors.IsNotFound(err) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("reading ConfigMap %s: %w", equinixv1.ConfigMapDeviceEvents, err)
	}
	raw, ok := cm.Data[project]
	if !ok {
		return time.Time{}, false, nil
	}
	at, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		// Someone edited it: read the project as if never read before.
		return time.Time{}, false, nil
	}
	return at, true, nil
}

// Save records a project's log position.
func (p *logPositions) Save(project string, at time.Time) error {
	value := at.UTC().Format(time.RFC3339Nano)
	cm, err := p.configMaps.Cache().Get(p.namespace, equinixv1.ConfigMapDeviceEvents)
	if apierrors.IsNotFound(err) {
		_, err = p.configMaps.Create(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: equinixv1.ConfigMapDeviceEvents,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "harvester-equinix-addon"}},
			Data: map[string]string{project: value},
		})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s: it appeared meanwhile; the next poll saves again", equinixv1.ConfigMapDeviceEvents)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s: %w", equinixv1.ConfigMapDeviceEvents, err)
	}
	if cm.Data[project] == value {
		return nil
	}
	upd := cm.DeepCopy()
	if upd.Data == nil {
		upd.Data = map[string]string{}
	}
	upd.Data[project] = value
	if _, err := p.configMaps.Update(upd); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", equinixv1.ConfigMapDeviceEvents, err)
	}
	return nil
}
