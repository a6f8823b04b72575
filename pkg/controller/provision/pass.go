package provision

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
)

// Pass is one pass of the Instance chain over one Instance, as a
// provider's steps see it: the reconcile pass (the working copy Obj, its
// conditions and Events, intents stored with Persist, Requeue; see
// reconcile.Pass), the chain's clock, and the chain's own steps that a
// provider's may need in the middle of theirs.
type Pass struct {
	*reconcile.Pass[*equinixv1.Instance, equinixv1.InstanceStatus]
	chain Chain
	now   func() time.Time
	poll  time.Duration
}

// Chain is what the Instance chain does for a provider's steps.
type Chain interface {
	// TrackNode follows the node the server registers as: its Joined
	// and Ready conditions, the phase, when it joined or went unhealthy.
	TrackNode(p *Pass) error
	// ConsolePassword returns the hash of the Instance's console
	// password, making the Secret that keeps it the first time. ok is
	// false when a Secret of its name is not the Instance's (a condition
	// says so).
	ConsolePassword(p *Pass) (hash string, ok bool, err error)
}

// NewPass starts a pass over inst (see reconcile.NewPass) for the chain,
// on its clock (time.Now when nil); poll is how long a waiting step waits
// before it looks again.
func NewPass(kind reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus], inst *equinixv1.Instance,
	chain Chain, now func() time.Time, poll time.Duration) *Pass {
	if now == nil {
		now = time.Now
	}
	return &Pass{Pass: reconcile.NewPass(kind, inst), chain: chain, now: now, poll: poll}
}

// Now is the chain's clock.
func (p *Pass) Now() time.Time { return p.now() }

// NowTime is Now as a status time.
func (p *Pass) NowTime() *metav1.Time {
	t := metav1.NewTime(p.now())
	return &t
}

// PollInterval is how long a waiting step waits before it looks again.
func (p *Pass) PollInterval() time.Duration { return p.poll }

// Poll asks to look again after the poll interval.
func (p *Pass) Poll() { p.Requeue(p.poll) }

// SetPhase sets the Instance's phase (status.status).
func (p *Pass) SetPhase(phase string) { p.Obj.Status.Status = phase }

// TrackNode runs the chain's step that follows the node (Chain.TrackNode).
func (p *Pass) TrackNode() error { return p.chain.TrackNode(p) }

// ConsolePassword runs the chain's step that keeps the console password
// (Chain.ConsolePassword).
func (p *Pass) ConsolePassword() (string, bool, error) { return p.chain.ConsolePassword(p) }
