package v1

import "k8s.io/apimachinery/pkg/util/intstr"

// RolloutStrategy bounds how a template change replaces a pool's servers: a
// Deployment's (and a MachineDeployment's) rolling update, counted in
// servers. The defaults, maxSurge 1 and maxUnavailable 0, add one server of
// the new template before an old one goes.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxSurge) || !has(self.maxUnavailable) || !((type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge.matches('^0+%$')) && (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable.matches('^0+%$')))",message="maxSurge and maxUnavailable cannot both be 0: a rollout could neither add a server nor remove one. To replace servers in place (no extra hardware, e.g. every reservation in use), set maxSurge: 0 and maxUnavailable: 1"
type RolloutStrategy struct {
	// MaxSurge is how many servers above count the pool may hold while it
	// rolls out, counting servers still being removed (their devices are
	// still billed, and their reservations still taken): a number, or a
	// percentage of count rounded up. 0 rolls in place: a server is removed
	// before its successor is created.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 1000 : self.matches('^[0-9]{1,3}%$')",message="must be a number of servers (0-1000) or a percentage of count such as 25%"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// MaxUnavailable is how many servers below count may be unavailable
	// while the pool rolls out: a number, or a percentage of count rounded
	// down. A rollout removes an old server only while at least
	// count - maxUnavailable servers stay available (a Ready node that is
	// neither cordoned nor in maintenance mode); failures can take more.
	// When both bounds round down to 0, one server may be unavailable.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 1000 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="must be a number of servers (0-1000) or a percentage of count from 0% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}
