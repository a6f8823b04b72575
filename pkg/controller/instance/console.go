package instance

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// takenRetry is how often the name of a console Secret that someone
// else's Secret holds is looked at again.
const takenRetry = 5 * time.Minute

// Every server gets a console password, kept in a Secret of the Instance
// (username rancher): the providers put its hash into the install
// configuration, and the release deletes the Secret.

// ConsolePassword returns the hash of the Instance's console password,
// creating the Secret that keeps the clear text the first time. Only the hash
// ever goes into a server's install configuration. ok is false when a Secret of that name exists
// that is not this Instance's (the condition says so).
func (h *Handler) ConsolePassword(p *provision.Pass) (hash string, ok bool, err error) {
	r := &run{Pass: p, h: h}
	sec, ok, err := r.passwordSecret()
	if err != nil || !ok {
		return "", ok, err
	}
	r.Obj.Status.PasswordSecret = sec.Name
	hash, err = harvester.HashPassword(string(sec.Data[provision.PasswordKey]))
	return hash, err == nil, err
}

// passwordSecret returns the Instance's console Secret, creating it if
// needed. A Secret of that name that does not carry this Instance's owner
// reference is someone else's: it is neither used nor, later, deleted.
func (r *run) passwordSecret() (*corev1.Secret, bool, error) {
	name, ns := r.Obj.Name+"-console", r.h.settings.Namespace
	sec, err := r.h.secrets.Cache().Get(ns, name)
	if apierrors.IsNotFound(err) {
		sec, err = r.createPasswordSecret(ns, name)
	}
	if apierrors.IsAlreadyExists(err) {
		sec, err = r.existingPasswordSecret(ns, name)
	}
	if err != nil {
		return nil, false, fmt.Errorf("console password Secret %s/%s: %w", ns, name, err)
	}
	if sec == nil || !ownedBy(sec.OwnerReferences, r.Obj) {
		r.SetCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, equinixv1.ReasonPasswordSecretTaken, fmt.Sprintf(
			"Secret %s/%s exists and does not belong to this Instance (it has no owner reference to it), so the addon neither uses nor deletes it; rename or delete it to let the server be provisioned",
			ns, name))
		r.Requeue(takenRetry)
		return nil, false, nil
	}
	return sec, true, nil
}

// existingPasswordSecret reads a console Secret the cache does not show: by
// metadata first, and its data only once it is known to be this Instance's.
func (r *run) existingPasswordSecret(ns, name string) (*corev1.Secret, error) {
	meta, err := r.h.secretLookup.Metadata(ns, name)
	if err != nil {
		return nil, err
	}
	if !ownedBy(meta.OwnerReferences, r.Obj) {
		return nil, nil
	}
	return r.h.secrets.Get(ns, name, metav1.GetOptions{})
}

// ownedBy reports whether refs name the Instance (by UID: a recreated
// Instance of the same name is another owner).
func ownedBy(refs []metav1.OwnerReference, inst *equinixv1.Instance) bool {
	for _, ref := range refs {
		if ref.UID == inst.UID && ref.Kind == "Instance" {
			return true
		}
	}
	return false
}

func (r *run) createPasswordSecret(ns, name string) (*corev1.Secret, error) {
	password, _, err := harvester.GenerateConsolePassword()
	if err != nil {
		return nil, err
	}
	controller := true
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{
				equinixv1.LabelSecret:   equinixv1.SecretConsole,
				equinixv1.LabelInstance: r.Obj.Name,
				equinixv1.LabelPool:     r.Obj.Spec.PoolName,
			},
			// The owner reference is what makes the Secret this Instance's:
			// only then is it used and deleted, and Kubernetes' garbage
			// collector deletes it with the Instance even if the addon is gone.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: equinixv1.SchemeGroupVersion.String(), Kind: "Instance",
				Name: r.Obj.Name, UID: r.Obj.UID, Controller: &controller,
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{provision.PasswordKey: []byte(password), "username": []byte("rancher")},
	}
	return r.h.secrets.Create(sec)
}
