package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
)

// PowerState is the power a server is asked to have.
type PowerState string

// Power states a user asks for.
const (
	PowerOn  PowerState = "on"
	PowerOff PowerState = "off"
)

// PowerSpec asks for a server's power. Actions on a server whose node has
// joined the cluster are carried out only while that node is in Harvester
// maintenance mode; until then they wait, and a condition says why.
type PowerSpec struct {
	// PowerState is the power the server should have: on (the default) or
	// off. A server switched off on request is not unhealthy: its pool
	// neither replaces it nor counts it as a failure.
	// +kubebuilder:validation:Enum=on;off
	// +kubebuilder:default=on
	// +optional
	PowerState PowerState `json:"powerState,omitempty"`
	// RebootRequestedAt asks for one reboot: set it to a time later than its
	// previous value (now, say). Each newer time is one reboot.
	// +optional
	RebootRequestedAt *metav1.Time `json:"rebootRequestedAt,omitempty"`
}

// WantedPowerState is spec.powerState with its default.
func (s *PowerSpec) WantedPowerState() PowerState {
	if s.PowerState == "" {
		return PowerOn
	}
	return s.PowerState
}

// OffOnRequest reports whether the server is, or is being, switched off
// because its spec asks for it: such a server is not unhealthy.
func (i *Instance) OffOnRequest() bool {
	return i.Spec.WantedPowerState() == PowerOff
}

// RestartingOnRequest reports whether a power-on or reboot asked for through
// the spec is under way, for at most grace since it was sent: its node may
// be NotReady meanwhile without the server being unhealthy. Such a request
// ends once the node is Ready again.
func (i *Instance) RestartingOnRequest(now metav1.Time, grace metav1.Duration) bool {
	la := i.Status.LastPowerAction
	if la == nil || (la.Action != hardwarev1.PowerActionOn && la.Action != hardwarev1.PowerActionReboot) || !la.InFlight() {
		return false
	}
	return la.Sent == nil || now.Sub(la.Sent.Time) < grace.Duration
}
