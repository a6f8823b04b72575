// Package bmcendpoint builds the BMC endpoint of a Seeder Inventory from the
// Secret it names. The Inventories' chain and the chain of the servers
// pools claim share it, so that one BMC is one endpoint (and, through the
// shared bmcdriver, one session) whoever asks.
package bmcendpoint

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// Problem says why an Inventory's BMC cannot be reached yet: a condition
// reason and a message for a person.
type Problem struct {
	Reason, Message string
}

// For reads the Secret the Inventory names, by name, and builds its
// BMC's endpoint (Connection with Login's credentials); timeout is the
// default bound of one request. The Inventories' chain and the chain of the
// servers pools claim both build it here, so that one BMC is one endpoint
// (and one session) whoever asks.
func For(ctx context.Context, secrets typedcorev1.SecretsGetter, inv *seederv1alpha1.Inventory, timeout time.Duration) (bmc.Endpoint, *Problem, error) {
	user, pass, problem, err := Login(ctx, secrets, inv)
	if err != nil || problem != nil {
		return bmc.Endpoint{}, problem, err
	}
	ep := Connection(inv, timeout)
	ep.Username, ep.Password = user, pass
	return ep, nil, nil
}

// Login reads the Secret the Inventory names, by name: the BMC's username
// and password, or the Problem that keeps them from being used. The
// password goes into a redact.Sensitive and nowhere else; neither it nor
// the user name is written anywhere.
func Login(ctx context.Context, secrets typedcorev1.SecretsGetter, inv *seederv1alpha1.Inventory) (string, redact.Sensitive, *Problem, error) {
	ref := inv.Spec.BaseboardManagementSpec.Connection.AuthSecretRef
	ns := ref.Namespace
	if ns == "" {
		ns = inv.Namespace
	}
	at := SecretAt(inv)
	if ref.Name == "" {
		return "", "", &Problem{equinixv1.ReasonCredentialsMissing, fmt.Sprintf("spec.baseboardSpec.connection.authSecretRef names no Secret: "+
			"name a Secret with keys %s and %s (Edit Config, Out-of-Band Access)", seederv1alpha1.SecretUsernameKey, seederv1alpha1.SecretPasswordKey)}, nil
	}
	sec, err := secrets.Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", "", &Problem{equinixv1.ReasonSecretNotFound, fmt.Sprintf("Secret %s not found: create it with keys %s and %s",
			at, seederv1alpha1.SecretUsernameKey, seederv1alpha1.SecretPasswordKey)}, nil
	case apierrors.IsForbidden(err):
		return "", "", &Problem{equinixv1.ReasonSecretNotFound, fmt.Sprintf("Secret %s cannot be read: %s", at, apierrors.ReasonForError(err))}, nil
	case err != nil:
		return "", "", nil, fmt.Errorf("reading Secret %s: %w", at, err)
	}
	user := strings.TrimSpace(string(sec.Data[seederv1alpha1.SecretUsernameKey]))
	pass := string(sec.Data[seederv1alpha1.SecretPasswordKey])
	var missing []string
	if user == "" {
		missing = append(missing, seederv1alpha1.SecretUsernameKey)
	}
	if pass == "" {
		missing = append(missing, seederv1alpha1.SecretPasswordKey)
	}
	if len(missing) > 0 {
		return "", "", &Problem{equinixv1.ReasonSecretIncomplete, fmt.Sprintf("Secret %s has no %s", at, strings.Join(missing, " and no "))}, nil
	}
	return user, redact.Sensitive(pass), nil, nil
}

// Connection is the BMC's endpoint as the Inventory's spec gives it, with
// no credentials (Login reads them); timeout is the default bound of one
// request.
func Connection(inv *seederv1alpha1.Inventory, timeout time.Duration) bmc.Endpoint {
	conn := inv.Spec.BaseboardManagementSpec.Connection
	protocol, port := conn.Protocol()
	ep := bmc.Endpoint{
		Protocol: bmc.Protocol(protocol),
		Host:     conn.Host,
		Port:     port,
		Timeout:  timeout,
		// A systemID on an IPMI BMC is refused by the endpoint's
		// checks, with a message, rather than dropped here.
		SystemID: conn.SystemID,
	}
	if conn.Timeout != nil && conn.Timeout.Duration > 0 {
		ep.Timeout = conn.Timeout.Duration
	}
	if protocol == seederv1alpha1.ProtocolRedfish {
		// IPMI has no TLS: the settings apply to Redfish only.
		ep.InsecureSkipVerify = conn.InsecureTLS
		ep.CABundle = []byte(conn.CABundle)
	}
	return ep
}

// SecretAt names the Inventory's Secret as namespace/name.
func SecretAt(inv *seederv1alpha1.Inventory) string {
	ref := inv.Spec.BaseboardManagementSpec.Connection.AuthSecretRef
	ns := ref.Namespace
	if ns == "" {
		ns = inv.Namespace
	}
	return ns + "/" + ref.Name
}

// Owner is the name an Inventory's BMC machine goes by in the shared
// driver (its holds, its power readings): the same for every chain.
func Owner(inv *seederv1alpha1.Inventory) string { return inv.Namespace + "/" + inv.Name }
