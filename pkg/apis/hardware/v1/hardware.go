package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Power states a server is seen in (HardwareStatus.PowerState), besides on
// and off.
const (
	PowerPoweringOn  = "powering-on"
	PowerPoweringOff = "powering-off"
	PowerUnknown     = "unknown"
)

// PowerAction is what a power request does.
type PowerAction string

// Power actions.
const (
	PowerActionOn     PowerAction = "on"
	PowerActionOff    PowerAction = "off"
	PowerActionReboot PowerAction = "reboot"
)

// PowerActionResult is how far a power request got.
type PowerActionResult string

// Results of a power request, in the order a request goes through them.
const (
	// PowerResultWaiting: not sent yet; it waits for the node's maintenance
	// mode, or for a retry after the API refused it (notBefore).
	PowerResultWaiting PowerActionResult = "Waiting"
	// PowerResultSending: the intent is stored and the call is (or was) on
	// its way; its answer is not known. Such a call is never sent again
	// unless the server is seen not to have changed once it could have.
	PowerResultSending PowerActionResult = "Sending"
	// PowerResultSent: the API took the call; the server has not reached
	// the state yet.
	PowerResultSent PowerActionResult = "Sent"
	// PowerResultSucceeded: the server reached the state asked for.
	PowerResultSucceeded PowerActionResult = "Succeeded"
	// PowerResultFailed: the request ended without the server reaching the
	// state (a reboot whose answer was lost cannot be checked); the message
	// says why.
	PowerResultFailed PowerActionResult = "Failed"
	// PowerResultCancelled: spec.powerState went back before the request
	// was sent.
	PowerResultCancelled PowerActionResult = "Cancelled"
)

// PowerActionStatus is the last power request and how it went.
type PowerActionStatus struct {
	// Action is on, off or reboot.
	// +kubebuilder:validation:Enum=on;off;reboot
	Action PowerAction `json:"action"`
	// Requested is when it was asked for: spec.rebootRequestedAt for a
	// reboot; when the controller saw the power state asked for differ from
	// the server's, for on and off.
	Requested metav1.Time `json:"requested"`
	// Sent is when the call was last sent. It is stored before the call, so
	// a call whose answer was lost (or whose sender died) is known to have
	// been sent.
	// +optional
	Sent *metav1.Time `json:"sent,omitempty"`
	// Attempts counts the calls sent for this request. A call that the API
	// refused, or that was lost before it reached the server (the server did
	// not change), is tried again; none is ever carried out twice.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// NotBefore is when a refused call may be sent again.
	// +optional
	NotBefore *metav1.Time `json:"notBefore,omitempty"`
	// Completed is when the request ended (succeeded, failed or cancelled).
	// +optional
	Completed *metav1.Time `json:"completed,omitempty"`
	// Result is Waiting, Sending, Sent, Succeeded, Failed or Cancelled.
	Result PowerActionResult `json:"result"`
	// Message says what happened last, in a sentence.
	// +optional
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the generation of the spec the request was
	// taken from: a failed request is asked again only by a newer spec.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// InFlight reports whether a call of the request may be under way: its
// intent is stored, or the API took it and the server has not got there.
func (p *PowerActionStatus) InFlight() bool {
	return p != nil && (p.Result == PowerResultSending || p.Result == PowerResultSent)
}

// Done reports whether the request has ended.
func (p *PowerActionStatus) Done() bool {
	return p != nil && (p.Result == PowerResultSucceeded || p.Result == PowerResultFailed || p.Result == PowerResultCancelled)
}

// HardwareStatus reports the machine under a node, as the hardware chain
// last saw it.
type HardwareStatus struct {
	// PowerState is the server's power as last seen: on, off, powering-on,
	// powering-off or unknown.
	// +optional
	PowerState string `json:"powerState,omitempty"`
	// LastPowerAction is the last power request and how it went.
	// +optional
	LastPowerAction *PowerActionStatus `json:"lastPowerAction,omitempty"`
	// ObservedRebootRequest is the latest spec.rebootRequestedAt the
	// controller has taken up; a newer one is a new reboot.
	// +optional
	ObservedRebootRequest *metav1.Time `json:"observedRebootRequest,omitempty"`
	// EventCursor marks the last of the machine's events forwarded as a
	// Kubernetes Event, so that none is forwarded twice, whatever restarts.
	// +optional
	EventCursor string `json:"eventCursor,omitempty"`
	// TerminationTime is when the provider takes the server back (a spot
	// server outbid, or a termination time set on the device). Its node is
	// put into maintenance mode at once and its pool starts a successor.
	// +optional
	TerminationTime *metav1.Time `json:"terminationTime,omitempty"`
}

// SubsystemHealth is the health of one group of parts.
type SubsystemHealth struct {
	// Name is Thermal, PowerSupplies, Fans, Storage, Memory or Processors.
	Name string `json:"name"`
	// State is OK, Unknown, Warning or Critical.
	State string `json:"state"`
	// Message names the parts that are not OK.
	// +optional
	Message string `json:"message,omitempty"`
}
