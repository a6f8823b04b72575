// Package bmcendpoint builds the BMC endpoint of a Seeder Inventory from the
// Secret it names. The Inventories' chain and the chain of the servers
// pools claim share it, so that one BMC is one endpoint (and, through the
// shared bmcdriver, one session) whoever asks.
package bmcendpoint

import (
	"context"
	"fmt"
	"slices"
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

// Connection is the BMC's endpoint as the Inventory gives it, with no
// credentials (Login reads them): the first of Candidates.
func Connection(inv *seederv1alpha1.Inventory, timeout time.Duration) bmc.Endpoint {
	return Candidates(inv, timeout)[0]
}

// Candidates are the BMC's endpoints to try, in order, with no
// credentials: the protocols and ports the connection allows (see
// Connection.Candidates), the one that answered last first (the status
// says it); timeout is the default bound of one request.
func Candidates(inv *seederv1alpha1.Inventory, timeout time.Duration) []bmc.Endpoint {
	conn := inv.Spec.BaseboardManagementSpec.Connection
	var out []bmc.Endpoint
	for _, c := range conn.Candidates() {
		ep := bmc.Endpoint{
			Protocol: bmc.Protocol(c.Protocol),
			Host:     conn.Host,
			Port:     c.Port,
			Timeout:  timeout,
			// A systemID on an IPMI BMC is refused by the endpoint's
			// checks, with a message, rather than dropped here; when the
			// protocol is not said, it goes to Redfish only.
			SystemID: conn.SystemID,
		}
		if len(conn.Candidates()) > 1 && c.Protocol == seederv1alpha1.ProtocolIPMI {
			ep.SystemID = ""
		}
		if conn.Timeout != nil && conn.Timeout.Duration > 0 {
			ep.Timeout = conn.Timeout.Duration
		}
		if c.Protocol == seederv1alpha1.ProtocolRedfish {
			// IPMI has no TLS: the settings apply to Redfish only.
			trust(&ep, inv)
		}
		out = append(out, ep)
	}
	if answered := answeredLast(inv); answered != "" {
		for i, ep := range out {
			if i > 0 && string(ep.Protocol)+"://"+ep.Address() == answered {
				out[0], out[i] = out[i], out[0]
			}
		}
	}
	return out
}

// answeredLast is protocol://address of what answered last, "" when the
// status does not say.
func answeredLast(inv *seederv1alpha1.Inventory) string {
	if hw := inv.Status.Hardware; hw != nil && hw.BMC != nil && hw.BMC.Protocol != "" {
		return string(hw.BMC.Protocol) + "://" + hw.BMC.Address
	}
	return ""
}

// trust sets how a Redfish BMC's certificate is judged. insecureTLS takes
// any; a caBundle only those that chain to it (or the system roots);
// without either (the UI's default), also the certificate pinned for this
// address (the first one seen, or one accepted) and the one a person names
// in the accept annotation, or, with none pinned, the first one presented.
func trust(ep *bmc.Endpoint, inv *seederv1alpha1.Inventory) {
	conn := inv.Spec.BaseboardManagementSpec.Connection
	ep.InsecureSkipVerify = conn.InsecureTLS
	ep.CABundle = []byte(conn.CABundle)
	if conn.InsecureTLS || conn.CABundle != "" {
		return
	}
	ep.TrustOnFirstUse = true
	if pin := PinnedCertificate(inv); pin != nil && pin.Address == ep.Address() {
		ep.PinnedCertificates = append(ep.PinnedCertificates, pin.SHA256)
	}
	if fp, ok := AcceptedCertificate(inv); ok && !slices.Contains(ep.PinnedCertificates, fp) {
		ep.PinnedCertificates = append(ep.PinnedCertificates, fp)
	}
}

// PinnedCertificate is the certificate the status pins, if any.
func PinnedCertificate(inv *seederv1alpha1.Inventory) *seederv1alpha1.PinnedCertificate {
	if hw := inv.Status.Hardware; hw != nil && hw.BMC != nil && hw.BMC.Certificate != nil {
		if fp, ok := bmc.NormalizeFingerprint(hw.BMC.Certificate.SHA256); ok {
			pin := *hw.BMC.Certificate
			pin.SHA256 = fp
			return &pin
		}
	}
	return nil
}

// AcceptedCertificate is the fingerprint the accept annotation names, when
// it names one (ok false when absent or not a SHA-256 fingerprint).
func AcceptedCertificate(inv *seederv1alpha1.Inventory) (string, bool) {
	v, ok := inv.Annotations[equinixv1.AnnotationAcceptBMCCertificate]
	if !ok {
		return "", false
	}
	return bmc.NormalizeFingerprint(v)
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
