package credentials

import (
	"fmt"
	"sync"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// MetadataFunc reads a Secret's metadata only (labelled or not), so that its
// data never reaches the process; a missing Secret is a NotFound error.
type MetadataFunc func(namespace, name string) (*metav1.PartialObjectMetadata, error)

// Lookup finds the Secrets the addon reads. Its cache holds only Secrets
// carrying v1.LabelSecret, which keeps every other Secret of the namespace
// out of the process; a Secret a person created without the label would then
// read as missing. Lookup tells the two apart with one metadata read per
// name and minute, so the condition says what to do.
type Lookup struct {
	cache    corecontrollers.SecretCache
	metadata MetadataFunc
	now      func() time.Time

	mu      sync.Mutex
	checked map[string]verdict
}

type verdict struct {
	at     time.Time
	exists bool
}

// recheck bounds the metadata reads for a missing Secret.
const recheck = time.Minute

// NewLookup reads through cache; metadata may be nil (then a missing Secret
// is just missing).
func NewLookup(cache corecontrollers.SecretCache, metadata MetadataFunc) *Lookup {
	return &Lookup{cache: cache, metadata: metadata, now: time.Now, checked: map[string]verdict{}}
}

// Metadata reads a Secret's metadata, labelled or not, without its data.
func (l *Lookup) Metadata(namespace, name string) (*metav1.PartialObjectMetadata, error) {
	if l.metadata == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	return l.metadata(namespace, name)
}

// Get returns a labelled Secret from the cache. A Secret that is not there
// is a NotFound error, or an *Error with v1.ReasonSecretNotLabelled when it
// exists without the label.
func (l *Lookup) Get(namespace, name string) (*corev1.Secret, error) {
	sec, err := l.cache.Get(namespace, name)
	if !apierrors.IsNotFound(err) || l.metadata == nil {
		return sec, err
	}
	if l.existsUnlabelled(namespace, name) {
		return nil, &Error{Reason: equinixv1.ReasonSecretNotLabelled, Message: fmt.Sprintf(
			"Secret %s/%s exists but lacks label %s=%s, so the addon does not read it: kubectl -n %s label secret %s %s=%s",
			namespace, name, equinixv1.LabelSecret, equinixv1.SecretCredentials, namespace, name, equinixv1.LabelSecret, equinixv1.SecretCredentials)}
	}
	return nil, err
}

func (l *Lookup) existsUnlabelled(namespace, name string) bool {
	key := namespace + "/" + name
	l.mu.Lock()
	v, ok := l.checked[key]
	l.mu.Unlock()
	if ok && l.now().Sub(v.at) < recheck {
		return v.exists
	}
	_, err := l.metadata(namespace, name)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		// Unknown: say "not found", which names the Secret, and ask again
		// at the next reconcile.
		return false
	}
	l.mu.Lock()
	l.checked[key] = verdict{at: l.now(), exists: exists}
	l.mu.Unlock()
	return exists
}
