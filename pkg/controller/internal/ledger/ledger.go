// Package ledger remembers every Equinix Metal project and metro the addon
// has made objects in, in one ConfigMap of its namespace. The orphan sweep
// lists each of them, so a device or VLAN left in a project keeps being
// looked for after the pools and Instances that used the project are gone,
// or their credentials Secret was pointed at another project.
package ledger

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// dataKey holds {"<project ID>": ["<metro>", ...]} as JSON.
const dataKey = "projects"

// Entries maps project IDs to their metros, sorted.
type Entries map[string][]string

// Projects returns the project IDs, sorted.
func (e Entries) Projects() []string {
	out := make([]string, 0, len(e))
	for p := range e {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Ledger reads and extends the ledger ConfigMap.
type Ledger struct {
	configMaps corecontrollers.ConfigMapController
	namespace  string

	mu sync.Mutex
	// written are the entries this process has seen stored, so that only
	// the first create in a project and metro costs a write.
	written map[string]bool
}

// New returns the ledger of namespace.
func New(configMaps corecontrollers.ConfigMapController, namespace string) *Ledger {
	return &Ledger{configMaps: configMaps, namespace: namespace, written: map[string]bool{}}
}

// Record stores project and metro before the first Metal object is made
// there; it returns once the entry is stored.
func (l *Ledger) Record(project, metro string) error {
	metro = strings.ToLower(metro)
	key := project + "/" + metro
	l.mu.Lock()
	done := l.written[key]
	l.mu.Unlock()
	if done {
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// A live read: the cache may lag behind a write of another worker,
		// and a stale copy would only conflict again.
		cm, err := l.configMaps.Get(l.namespace, equinixv1.ConfigMapLedger, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return l.create(project, metro)
		}
		if err != nil {
			return err
		}
		entries, err := decode(cm)
		if err != nil {
			return err
		}
		if slices.Contains(entries[project], metro) {
			return nil
		}
		entries[project] = append(entries[project], metro)
		sort.Strings(entries[project])
		return l.update(cm, entries)
	})
	if err != nil {
		return fmt.Errorf("recording project %s, metro %s in ConfigMap %s/%s: %w", project, metro, l.namespace, equinixv1.ConfigMapLedger, err)
	}
	l.mu.Lock()
	l.written[key] = true
	l.mu.Unlock()
	return nil
}

// Entries returns what the ledger holds, from the cache.
func (l *Ledger) Entries() (Entries, error) {
	cm, err := l.configMaps.Cache().Get(l.namespace, equinixv1.ConfigMapLedger)
	if apierrors.IsNotFound(err) {
		return Entries{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", l.namespace, equinixv1.ConfigMapLedger, err)
	}
	return decode(cm)
}

// Forget removes a project once nothing of the addon is left in it.
func (l *Ledger) Forget(project string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := l.configMaps.Get(l.namespace, equinixv1.ConfigMapLedger, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		entries, err := decode(cm)
		if err != nil {
			return err
		}
		if _, ok := entries[project]; !ok {
			return nil
		}
		delete(entries, project)
		return l.update(cm, entries)
	})
	if err != nil {
		return fmt.Errorf("removing project %s from ConfigMap %s/%s: %w", project, l.namespace, equinixv1.ConfigMapLedger, err)
	}
	l.mu.Lock()
	for k := range l.written {
		if strings.HasPrefix(k, project+"/") {
			delete(l.written, k)
		}
	}
	l.mu.Unlock()
	return nil
}

func (l *Ledger) create(project, metro string) error {
	raw, err := json.Marshal(Entries{project: {metro}})
	if err != nil {
		return err
	}
	_, err = l.configMaps.Create(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace, Name: equinixv1.ConfigMapLedger},
		Data:       map[string]string{dataKey: string(raw)},
	})
	if apierrors.IsAlreadyExists(err) {
		// Another worker created it: read and merge again.
		return apierrors.NewConflict(corev1.Resource("configmaps"), equinixv1.ConfigMapLedger, err)
	}
	return err
}

func (l *Ledger) update(cm *corev1.ConfigMap, entries Entries) error {
	raw, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[dataKey] = string(raw)
	_, err = l.configMaps.Update(cm)
	return err
}

func decode(cm *corev1.ConfigMap) (Entries, error) {
	entries := Entries{}
	raw := cm.Data[dataKey]
	if raw == "" {
		return entries, nil
	}
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, dataKey, err)
	}
	return entries, nil
}
