// Package credentials reads a pool's Equinix Metal credentials from its Secret,
// through the cache, every time they are needed. Nothing here copies the token
// anywhere: it lives only in the Secret and in the Metal client built from it.
package credentials

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Keys of the credentials Secret, as the install steps of docs/install.md create them.
const (
	TokenKey   = "METAL_AUTH_TOKEN" //nolint:gosec // G101: the key a token is stored under, not a token
	ProjectKey = "PROJECT_ID"
)

// Error says why a Secret gave no usable credentials; its message names what is missing
// and never a secret value.
type Error = conditions.Error

// AsError returns the *Error in err's chain, if any.
var AsError = conditions.AsError

// Ref is a resolved Secret reference.
type Ref struct{ Namespace, Name string }

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// SecretGetter reads a Secret by namespace and name: the Secret cache, or
// a Lookup over it.
type SecretGetter interface {
	Get(namespace, name string) (*corev1.Secret, error)
}

// Resolver finds the Secret a pool names and reads it.
type Resolver struct {
	secrets          SecretGetter
	defaultNamespace string
	defaultName      string
}

// NewResolver uses the controller's namespace and default Secret name for pools
// that name no Secret of their own.
func NewResolver(secrets SecretGetter, namespace, name string) *Resolver {
	return &Resolver{secrets: secrets, defaultNamespace: namespace, defaultName: name}
}

// RefFor resolves a pool's (or instance's) reference with the defaults.
func (r *Resolver) RefFor(ref *equinixv1.SecretReference) Ref {
	out := Ref{Namespace: r.defaultNamespace, Name: r.defaultName}
	if ref != nil && ref.Name != "" {
		out.Name = ref.Name
	}
	return out
}

// For returns the credentials a reference points at.
func (r *Resolver) For(ref *equinixv1.SecretReference) (metal.Credentials, error) {
	resolved := r.RefFor(ref)
	sec, err := r.secrets.Get(resolved.Namespace, resolved.Name)
	if apierrors.IsNotFound(err) {
		return metal.Credentials{}, &Error{Reason: equinixv1.ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %s not found: create it with keys %s and %s, labelled %s=%s",
				resolved, TokenKey, ProjectKey, equinixv1.LabelSecret, equinixv1.SecretCredentials)}
	}
	if err != nil {
		return metal.Credentials{}, fmt.Errorf("reading Secret %s: %w", resolved, err)
	}
	creds := metal.Credentials{
		Token:     strings.TrimSpace(string(sec.Data[TokenKey])),
		ProjectID: strings.TrimSpace(string(sec.Data[ProjectKey])),
	}
	var missing []string
	if creds.Token == "" {
		missing = append(missing, TokenKey)
	}
	if creds.ProjectID == "" {
		missing = append(missing, ProjectKey)
	}
	if len(missing) > 0 {
		return metal.Credentials{}, &Error{Reason: equinixv1.ReasonSecretIncomplete,
			Message: fmt.Sprintf("Secret %s has no %s", resolved, strings.Join(missing, " and no "))}
	}
	return creds, nil
}
