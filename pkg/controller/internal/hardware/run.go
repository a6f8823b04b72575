package hardware

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// factsRetry paces reading facts again after a failure.
const factsRetry = time.Minute

// run is one pass of the steps over one target: the target's pass (see
// reconcile.Pass), whose status the steps change and its handler writes
// once at the end (and Persist before each power call, the intent), and
// what the steps work with.
type run struct {
	Target
	s       *Steps
	machine machine.Machine
	// node is the machine's Node, nil while there is none.
	node *corev1.Node
	now  time.Time
	// outbox writes the target's Events, under its name, off the
	// handler's workers; nil when the run writes them itself.
	outbox *Outbox
}

// sync runs the steps: events, then (unless the target is going) what the
// node shows, the facts and a reclaim notice, then power.
func (r *run) sync() error {
	var errs []error
	if err := r.forwardEvents(); err != nil {
		errs = append(errs, err)
	}
	if r.Deleting() {
		return errors.Join(errs...)
	}
	facts, err := r.machine.Facts(r.s.ctx)
	if err != nil {
		// Facts wait for the next run; events and power go on.
		logrus.Debugf("hardware facts of %s: %v", r.Name(), err)
		r.Requeue(factsRetry)
	} else {
		if err := r.reclaim(facts); err != nil {
			errs = append(errs, err)
		}
		if err := r.applyFacts(facts); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.power(); err != nil {
		errs = append(errs, err)
	}
	if err := r.signalHealth(); err != nil {
		errs = append(errs, err)
	}
	if r.Changed() {
		r.observeNode()
	}
	return errors.Join(errs...)
}

// power runs the target's kind of power step, if it has one.
func (r *run) power() error {
	switch p := r.Target.(type) {
	case RequestedPower:
		return r.syncRequestedPower(p)
	case DeclaredPower:
		return r.syncPower(p)
	}
	return nil
}

// observeNode takes what a Node says about the machine's power: a Ready
// node runs on a machine that is on. It only fills a power state never
// seen; events and power requests keep it current. It rides along with a
// status write the run makes anyway: a write of its own per server, right
// after each joins, would race the provisioning chain's writes then.
func (r *run) observeNode() {
	st := r.Hardware()
	if st.PowerState == "" && harvester.IsNodeReady(r.node) {
		st.PowerState = string(equinixv1.PowerOn)
	}
}
