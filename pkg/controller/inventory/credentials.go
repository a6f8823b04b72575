package inventory

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/bmcendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// secretRead is a pass's read of the Inventory's Secret: at most one, and
// none in a pass that has nothing for the BMC (see needsBMC), which most
// are: a poll's own status write brings the Inventory back for a pass that
// finds nothing due. It says on the Inventory whether the Secret lets the
// BMC be reached.
type secretRead struct {
	r    *run
	t    *target
	once sync.Once
	user string
	pass redact.Sensitive
	// problem says why the Secret cannot be used; err is a failure of the
	// cluster to read it, the run's to return.
	problem *bmcendpoint.Problem
	err     error
}

func (s *secretRead) read() {
	s.once.Do(func() {
		s.user, s.pass, s.problem, s.err = bmcendpoint.Login(s.r.h.ctx, s.r.h.secrets, s.t.Obj)
		switch {
		case s.err != nil:
		case s.problem != nil:
			s.t.SetCondition(equinixv1.BMCCredentialsReady, metav1.ConditionFalse, s.problem.Reason, s.problem.Message)
			// No watch brings the Inventory back when the Secret is fixed.
			s.t.Requeue(blockedRecheck)
		default:
			s.t.SetCondition(equinixv1.BMCCredentialsReady, metav1.ConditionTrue, equinixv1.ReasonCredentialsReady,
				fmt.Sprintf("Secret %s holds a username and a password", bmcendpoint.SecretAt(s.t.Obj)))
		}
	})
}

// ready reads the Secret: false when it does not let the BMC be reached
// (the condition says why), or when it could not be read (the error).
func (s *secretRead) ready() (bool, error) {
	s.read()
	return s.err == nil && s.problem == nil, s.err
}

// credentials are the machine's (bmcdriver.MachineOptions.Credentials).
func (s *secretRead) credentials() (string, redact.Sensitive, error) {
	s.read()
	switch {
	case s.err != nil:
		return "", "", s.err
	case s.problem != nil:
		return "", "", errors.New(s.problem.Message)
	}
	return s.user, s.pass, nil
}

// needsBMC says whether the pass has anything for the BMC, which takes
// its credentials: the first pass; the recheck of a Secret that did not
// let the BMC be reached, or of credentials the BMC refused (a changed
// Secret lifts the hold); a spec not yet seen; a power request to take up,
// one under way or its effect still checked; a fence step that reads or
// switches the power; a poll due, or facts to read. A credentials hold's
// recheck is the BMC's to tell too (its machine reads the Secret for it).
// readsDue is the machine's ReadsDue; powerDue says the power shown is due
// for a read.
func (r *run) needsBMC(t *target, readsDue, powerDue func() bool) bool {
	inv := t.Obj
	st := inv.Status
	switch {
	case !conditions.IsTrue(st.Conditions, equinixv1.BMCCredentialsReady), conditions.IsFalse(st.Conditions, equinixv1.BMCAuthenticated):
		return true
	case st.Hardware == nil || st.Hardware.ObservedGeneration != inv.Generation:
		return true
	case st.Hardware.LastPowerAction.InFlight() || hardware.PowerSettling(&st.Hardware.HardwareStatus, r.now):
		return true
	}
	if _, ok := t.requested(); ok {
		return true
	}
	return r.h.fence.UsesMachine(st.Conditions, r.node) || readsDue() || powerDue()
}
