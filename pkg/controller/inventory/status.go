package inventory

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/bmcendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

const (
	// minAuthRetry is the least wait after a BMC refused the credentials,
	// whatever the poll interval: BMCs lock an account after a few refused
	// logins within a minute or so.
	minAuthRetry = time.Minute
	// maxAuthRetry is the longest wait between two logins a BMC refused
	// (the poll interval, when longer).
	maxAuthRetry = 30 * time.Minute
)

// observeBMC turns what the pass learnt of the BMC into the status: the
// Reachable, Authenticated and EventLogAvailable conditions (an Event on
// each change names the problem), the health, the power and the time of
// the poll. A failure of the BMC is not the run's error: it is a
// condition, and the BMC is tried again after min(poll interval,
// bmcRetry), not at the work queue's pace (see bmcRetryAfter for refused
// credentials). Only a failure of the cluster (an Event or a Node patch
// refused) is returned.
func (r *run) observeBMC(t *target, m *bmcdriver.Machine, ep bmc.Endpoint, interval time.Duration, runErr error) error {
	st := &t.Obj.Status
	o := m.Observed()
	if o.Problem != nil {
		r.bmcProblem(t, ep, o)
		retry := r.bmcRetryAfter(t, o, interval)
		m.Hold(r.now.Add(retry))
		if failure.ClassOf(o.Problem) == failure.Unauthorized {
			// The hold lifts when the Secret changes, which only a read
			// of it tells.
			retry = min(retry, secretRecheck)
		}
		t.Requeue(retry)
	} else if o.Contacted {
		m.Hold(time.Time{})
		t.SetCondition(equinixv1.BMCReachable, metav1.ConditionTrue, equinixv1.ReasonBMCReachable, fmt.Sprintf("the BMC at %s answered", ep.Address()))
		t.SetCondition(equinixv1.BMCAuthenticated, metav1.ConditionTrue, equinixv1.ReasonAuthenticated, "the BMC took the credentials")
	} else if conditions.Get(st.Conditions, equinixv1.BMCReachable) == nil {
		t.SetCondition(equinixv1.BMCReachable, metav1.ConditionUnknown, equinixv1.ReasonBMCNotContacted, "the BMC has not been contacted yet")
	} else if conditions.IsFalse(st.Conditions, equinixv1.BMCAuthenticated) {
		// Every login waits for the hold, unless the Secret changed, which
		// only a read of it tells.
		t.Requeue(secretRecheck)
	}
	hw := st.Hardware
	if hw == nil {
		t.Hardware()
		hw = st.Hardware
	}
	r.observeEndpoint(t, o)
	if o.Log != nil {
		r.eventLogCondition(t, ep, o.Log)
	}
	if o.Health != nil {
		hw.Health = string(o.Health.Overall)
		hw.Subsystems = hw.Subsystems[:0:0]
		for _, s := range o.Health.Subsystems {
			hw.Subsystems = append(hw.Subsystems, hardwarev1.SubsystemHealth{Name: string(s.Subsystem), State: string(s.State), Message: s.Message})
		}
	}
	if o.Power != "" {
		st.MachinePowerState = machinePowerState(o.Power)
		if !hw.LastPowerAction.InFlight() {
			hw.PowerState = string(o.Power)
		}
	}
	runErr = bmcFailuresHandled(runErr)
	if !o.Polled.IsZero() && runErr == nil {
		polled := metav1.NewTime(o.Polled)
		hw.LastPolled = &polled
		// Every event of the poll was forwarded (or passed, with events
		// off): keep what the poll read even where no event carried it (an
		// OK reading, a cleared log), so the next change is told against it.
		hw.EventCursor = o.Cursor
	}
	return runErr
}

// machinePowerState is Seeder's word for a power reading: on, off, or
// unknown for anything in between.
func machinePowerState(p machine.PowerState) string {
	switch p {
	case machine.PowerOn, machine.PowerOff:
		return string(p)
	}
	return string(machine.PowerUnknown)
}

// bmcProblem sets the conditions of a failure to reach or use the BMC.
func (r *run) bmcProblem(t *target, ep bmc.Endpoint, o bmcdriver.Observation) {
	var be *failure.Error
	msg := o.Problem.Error()
	if errors.As(o.Problem, &be) {
		msg = be.Message
	}
	at := ep.Address()
	reachable := func(reason, text string) {
		t.SetCondition(equinixv1.BMCReachable, metav1.ConditionFalse, reason, fmt.Sprintf("the BMC at %s: %s", at, text))
	}
	ref := t.Obj.Spec.BaseboardManagementSpec.Connection.AuthSecretRef
	switch failure.ClassOf(o.Problem) {
	case failure.Unauthorized:
		t.SetCondition(equinixv1.BMCReachable, metav1.ConditionTrue, equinixv1.ReasonBMCReachable, fmt.Sprintf("the BMC at %s answered", at))
		t.SetCondition(equinixv1.BMCAuthenticated, metav1.ConditionFalse, equinixv1.ReasonAuthenticationFailed, fmt.Sprintf(
			"the BMC at %s refused the credentials of Secret %s: %s (fix the username or password in the Secret)",
			at, secretName(t.Obj.Namespace, ref.Namespace, ref.Name), msg))
	case failure.Unreachable:
		reachable(equinixv1.ReasonBMCUnreachable, msg)
	case failure.ProtocolMismatch:
		reachable(equinixv1.ReasonBMCProtocolMismatch, fmt.Sprintf("%s (port %d is spoken to as %s: 623 means IPMI, any other port Redfish over HTTPS)",
			msg, ep.Port, ep.Protocol))
	case failure.TLS:
		var changed *bmc.CertificateChangedError
		if errors.As(o.Problem, &changed) {
			reachable(equinixv1.ReasonBMCCertificateChanged, certificateChanged(t.Obj, changed))
			break
		}
		reachable(equinixv1.ReasonBMCCertificateInvalid, msg+" (set caBundle to the BMC's CA, or insecureTLS)")
	case failure.Invalid:
		reachable(equinixv1.ReasonInvalidConfiguration, msg)
	default:
		reachable(equinixv1.ReasonBMCError, msg)
	}
}

func secretName(inventoryNamespace, namespace, name string) string {
	if namespace == "" {
		namespace = inventoryNamespace
	}
	return namespace + "/" + name
}

// eventLogCondition says whether the poll could read an event log.
func (r *run) eventLogCondition(t *target, ep bmc.Endpoint, log *bmcdriver.LogStatus) {
	if log.Read {
		t.SetCondition(equinixv1.BMCEventLogAvailable, metav1.ConditionTrue, equinixv1.ReasonEventLogRead, "the BMC's event log is read")
		return
	}
	t.SetCondition(equinixv1.BMCEventLogAvailable, metav1.ConditionFalse, equinixv1.ReasonNoEventLog, fmt.Sprintf(
		"the BMC at %s offers no event log the addon can read, so none of its entries become Events (health changes still do): %s",
		ep.Address(), log.Message))
}

// bmcRetryAfter is when a BMC that failed is tried again: after
// min(poll interval, bmcRetry). A BMC that refused the credentials sees no
// login for at least minAuthRetry whatever the poll interval, then for as
// long as it has refused them (so the waits double), at most maxAuthRetry
// or the poll interval if longer: BMCs lock an account after a few refused
// logins. The driver's hold keeps every login back meanwhile, unless the
// credentials change.
func (r *run) bmcRetryAfter(t *target, o bmcdriver.Observation, interval time.Duration) time.Duration {
	if failure.ClassOf(o.Problem) != failure.Unauthorized {
		return min(interval, bmcRetry)
	}
	since := time.Duration(0)
	if c := conditions.Get(t.Obj.Status.Conditions, equinixv1.BMCAuthenticated); c != nil && c.Status == metav1.ConditionFalse {
		since = r.now.Sub(c.LastTransitionTime.Time)
	}
	return min(max(minAuthRetry, since), max(interval, maxAuthRetry))
}

// bmcFailuresHandled drops from a run's error the BMC's failures, which
// the conditions report and bmcRetry paces, and keeps the rest.
func bmcFailuresHandled(err error) error {
	if err == nil {
		return nil
	}
	var kept []error
	for _, e := range flatten(err) {
		if failure.From(e, machine.Seam) != nil {
			logrus.Debugf("BMC: %s", failure.Message(e))
			continue
		}
		kept = append(kept, e)
	}
	return errors.Join(kept...)
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// observeEndpoint records what answered (status.hardware.bmc): the protocol
// and address, told in an Event when the connection left the protocol to
// be found, and the certificate trusted without a CA, pinned the first
// time, or when a person accepted another.
func (r *run) observeEndpoint(t *target, o bmcdriver.Observation) {
	if o.Endpoint.Protocol == "" {
		return
	}
	hw := t.Obj.Status.Hardware
	if hw.BMC == nil {
		hw.BMC = &seederv1alpha1.BMCStatus{}
	}
	b := hw.BMC
	protocol, address := seederv1alpha1.Protocol(o.Endpoint.Protocol), o.Endpoint.Address()
	if b.Protocol != protocol || b.Address != address {
		if len(t.Obj.Spec.BaseboardManagementSpec.Connection.Candidates()) > 1 {
			t.Eventf(equinixv1.ReasonBMCProtocolFound, "the BMC at %s answers %s: port %d does not say the protocol, so Redfish on %d "+
				"is tried first, then IPMI on %d; %s is spoken from now on (set providerOptions to choose)",
				o.Endpoint.Host, protocolName(protocol), seederv1alpha1.IPMIPort, seederv1alpha1.RedfishPort, seederv1alpha1.IPMIPort, address)
		}
		b.Protocol, b.Address = protocol, address
	}
	if o.Certificate == nil || !o.Endpoint.TrustOnFirstUse {
		return
	}
	r.observeCertificate(t, b, address, *o.Certificate)
}

// observeCertificate pins the certificate a session trusted without a CA
// bundle: the first one seen at the address (trust on first use), or one a
// person accepted, each told in an Event; one that verifies against the
// system roots is pinned too, so that a certificate that does not, later,
// is refused rather than trusted as a first one.
func (r *run) observeCertificate(t *target, b *seederv1alpha1.BMCStatus, address string, cert bmc.Certificate) {
	pin := b.Certificate
	if pin != nil && pin.Address == address && pin.SHA256 == cert.SHA256 {
		return
	}
	now := metav1.NewTime(r.now)
	next := &seederv1alpha1.PinnedCertificate{SHA256: cert.SHA256, Address: address, Since: &now}
	accepted, _ := bmcendpoint.AcceptedCertificate(t.Obj)
	switch {
	case cert.Verified:
		next.TrustedBy = seederv1alpha1.CertificateTrustedVerified
	case pin != nil && pin.Address == address && accepted == cert.SHA256:
		next.TrustedBy = seederv1alpha1.CertificateTrustedAccepted
		t.Eventf(equinixv1.ReasonBMCCertificateAccepted, "the BMC at %s presented the certificate accepted by annotation %s (SHA-256 %s), "+
			"which replaces the one trusted before (SHA-256 %s)", address, equinixv1.AnnotationAcceptBMCCertificate, cert.SHA256, pin.SHA256)
	case accepted == cert.SHA256:
		next.TrustedBy = seederv1alpha1.CertificateTrustedAccepted
		t.Eventf(equinixv1.ReasonBMCCertificateAccepted, "the BMC at %s presented the certificate accepted by annotation %s (SHA-256 %s)",
			address, equinixv1.AnnotationAcceptBMCCertificate, cert.SHA256)
	default:
		next.TrustedBy = seederv1alpha1.CertificateTrustedFirstUse
		t.Eventf(equinixv1.ReasonBMCCertificatePinned, "the BMC at %s presented a certificate no trusted CA signed (SHA-256 %s): "+
			"it is trusted from now on, as the first one seen, and any other certificate there is refused until a person accepts it "+
			"(compare the fingerprint with the BMC's own, e.g. in its web interface; set caBundle to trust a CA instead)", address, cert.SHA256)
	}
	b.Certificate = next
}

// certificateChanged says that the BMC presented another certificate than
// the one trusted, and how a person accepts it.
func certificateChanged(inv *seederv1alpha1.Inventory, e *bmc.CertificateChangedError) string {
	return fmt.Sprintf("the BMC presented a certificate with SHA-256 fingerprint %s, not the one trusted (%s): the BMC's certificate "+
		"was renewed or regenerated, or something between the addon and the BMC presents its own, so nothing is sent to it. If the "+
		"new fingerprint is the BMC's own (its web interface shows it), accept it: kubectl -n %s annotate inventory %s %s=%s --overwrite",
		e.Presented, strings.Join(e.Pinned, ", "), inv.Namespace, inv.Name, equinixv1.AnnotationAcceptBMCCertificate, e.Presented)
}

func protocolName(p seederv1alpha1.Protocol) string {
	if p == seederv1alpha1.ProtocolIPMI {
		return "IPMI"
	}
	return "Redfish"
}
