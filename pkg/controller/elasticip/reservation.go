package elasticip

import (
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Paces of the waits a person ends (the watches bring the ElasticIP back
// sooner when they do) and of the short ones.
const (
	authRetry        = time.Minute
	notReservedRetry = 10 * time.Minute
	refusedRetry     = 5 * time.Minute
	busyRetry        = 2 * time.Second
)

// elasticTypes are the reservations an Elastic IP comes from.
var elasticTypes = []string{metal.IPReservationPublicIPv4, metal.IPReservationGlobalIPv4}

// conflict holds back every ElasticIP of an address but the oldest: two
// following different Services would move the address back and forth.
func (r *run) conflict() (bool, error) {
	all, err := r.h.eips.Cache().List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, other := range all {
		if other.Name == r.Obj.Name || other.Spec.Address != r.Obj.Spec.Address || other.DeletionTimestamp != nil {
			continue
		}
		if older(other, r.Obj) {
			r.SetCondition(equinixv1.ElasticIPReady, metav1.ConditionFalse, equinixv1.ReasonAddressConflict, fmt.Sprintf(
				"ElasticIP %s already manages %s; this one does nothing until one of them is deleted", other.Name, r.Obj.Spec.Address))
			r.setPhase(equinixv1.ElasticIPPhaseError)
			return true, nil
		}
	}
	return false, nil
}

func older(a, b *equinixv1.ElasticIP) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// client is the Metal client of the ElasticIP's credentials, or nil after
// reporting why there is none.
func (r *run) client() (metal.Client, error) {
	creds, err := r.h.credentials.For(r.Obj.Spec.CredentialsSecret)
	if cerr, ok := credentials.AsError(err); ok {
		r.SetCondition(equinixv1.ElasticIPCredentialsReady, metav1.ConditionFalse, cerr.Reason, cerr.Message)
		r.setPhase(equinixv1.ElasticIPPhaseError)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st := &r.Obj.Status
	if st.ProjectID != "" && st.ProjectID != creds.ProjectID {
		if st.AssignedByAddon || st.Move != nil {
			// An assignment the addon made (or may have made) in the old
			// project is only ever undone with that project's credentials:
			// forgetting it would leave it, and the block under it, paid
			// for and never released. The Secret is waited for instead.
			r.SetCondition(equinixv1.ElasticIPCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectMismatch, fmt.Sprintf(
				"Secret %s now names project %s, but the addon assigned %s in project %s; it acts on this address only with credentials of project %s: put them back in the Secret",
				r.h.credentials.RefFor(r.Obj.Spec.CredentialsSecret), creds.ProjectID, r.Obj.Spec.Address, st.ProjectID, st.ProjectID))
			r.setPhase(equinixv1.ElasticIPPhaseError)
			r.onVIPHost = nil
			r.Requeue(authRetry)
			return nil, nil
		}
		// What was read belongs to the old project, and nothing there is
		// the addon's to undo: the address is looked for in the new one.
		st.ReservationID, st.DeviceID, st.AssignmentID = "", "", ""
		r.h.forget(r.Obj.Name)
	}
	st.ProjectID = creds.ProjectID
	c, err := r.h.metal.Client(creds)
	if err != nil {
		return nil, fmt.Errorf("building the Metal client: %w", err)
	}
	if !conditions.IsTrue(st.Conditions, equinixv1.ElasticIPCredentialsReady) {
		conditions.True(&st.Conditions, r.Obj.Generation, equinixv1.ElasticIPCredentialsReady, equinixv1.ReasonCredentialsReady,
			fmt.Sprintf("Secret %s holds credentials of project %s", r.h.credentials.RefFor(r.Obj.Spec.CredentialsSecret), creds.ProjectID))
	}
	return c, nil
}

// reservation finds the reservation holding the address: by the ID found
// last time, else among the project's public and global IPv4 reservations.
// An address in none of them is reported and never touched.
func (r *run) reservation(c metal.Client) (*metal.IPReservation, error) {
	addr, st := r.Obj.Spec.Address, &r.Obj.Status
	if id := st.ReservationID; id != "" {
		res, err := c.GetIPReservation(r.h.ctx, id)
		switch {
		case err == nil && res.Contains(addr):
			return r.reserved(res), nil
		case err != nil && !metal.IsNotFound(err):
			return nil, r.metalFailure("reading IP reservation "+id, equinixv1.ElasticIPReserved, err)
		}
	}
	list, err := c.ListIPReservations(r.h.ctx, metal.ListIPReservationsOptions{Types: elasticTypes})
	if err != nil {
		return nil, r.metalFailure("listing the project's IP reservations", equinixv1.ElasticIPReserved, err)
	}
	for i := range list {
		if res := &list[i]; !res.Management && res.Contains(addr) {
			return r.reserved(res), nil
		}
	}
	st.ReservationID, st.DeviceID, st.AssignmentID, st.AssignedByAddon = "", "", "", false
	r.SetCondition(equinixv1.ElasticIPReserved, metav1.ConditionFalse, equinixv1.ReasonNotReserved, fmt.Sprintf(
		"%s lies in no public or global IPv4 reservation of project %s, so it is not an Elastic IP the addon can assign; reserve it in that project (or name another project's Secret in spec.credentialsSecret)",
		addr, st.ProjectID))
	r.waiting(equinixv1.ElasticIPReserved)
	r.Requeue(notReservedRetry)
	return nil, nil
}

// reserved records the reservation; one still pending approval cannot be
// assigned yet.
func (r *run) reserved(res *metal.IPReservation) *metal.IPReservation {
	r.Obj.Status.ReservationID = res.ID
	prefix, _ := res.Prefix()
	if res.State != "" && res.State != metal.IPReservationCreated {
		r.SetCondition(equinixv1.ElasticIPReserved, metav1.ConditionFalse, equinixv1.ReasonNotReserved, fmt.Sprintf(
			"%s lies in reservation %s (%s), which is %s, not created: it can be assigned once Equinix approves it", r.Obj.Spec.Address, res.ID, prefix, res.State))
		r.waiting(equinixv1.ElasticIPReserved)
		r.Requeue(r.h.settings.Resync)
		return nil
	}
	r.SetCondition(equinixv1.ElasticIPReserved, metav1.ConditionTrue, equinixv1.ReasonReserved, fmt.Sprintf(
		"%s lies in reservation %s (%s, %s)", r.Obj.Spec.Address, res.ID, prefix, metroOf(res)))
	return res
}

func metroOf(res *metal.IPReservation) string {
	if res.Metro == "" {
		return "global"
	}
	return "metro " + res.Metro
}

// record notes where the address is now and returns its assignments (one,
// or none: Metal refuses a second).
func (r *run) record(res *metal.IPReservation) []metal.IPAddress {
	var current []metal.IPAddress
	want, _ := netip.ParseAddr(r.Obj.Spec.Address)
	for _, a := range res.Assignments {
		if got, err := netip.ParseAddr(a.Address); err == nil && got == want {
			current = append(current, a)
		}
	}
	st := &r.Obj.Status
	if len(current) == 0 {
		st.DeviceID, st.AssignmentID, st.AssignedByAddon = "", "", false
		return nil
	}
	if current[0].ID != st.AssignmentID {
		// Made by someone else, or by a move whose answer was lost (the move
		// claims it when it finds it on its target).
		st.AssignedByAddon = false
	}
	st.DeviceID, st.AssignmentID = current[0].DeviceID, current[0].ID
	return current
}

// metalFailure turns a failed call into an action: wait what a 429 asks,
// poll a busy object, stop on refused credentials, report a rejected
// request on cond; anything else is returned so the workqueue backs off.
func (r *run) metalFailure(step, cond string, err error) error {
	if wait, ok := failure.SlowDown(err, busyRetry); ok {
		r.Requeue(wait)
		return nil
	}
	switch failure.ClassOf(err) {
	case failure.Unauthorized, failure.Forbidden:
		r.SetCondition(equinixv1.ElasticIPCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid, fmt.Sprintf(
			"Equinix Metal refused the credentials of Secret %s while %s: %s; nothing is changed until they work",
			r.h.credentials.RefFor(r.Obj.Spec.CredentialsSecret), step, failure.Message(err)))
		r.setPhase(equinixv1.ElasticIPPhaseError)
		r.onVIPHost = nil
		r.Requeue(authRetry)
		return nil
	case failure.Invalid:
		r.SetCondition(cond, metav1.ConditionFalse, equinixv1.ReasonAssignRefused, fmt.Sprintf("Equinix Metal rejected %s: %s", step, failure.Message(err)))
		r.setPhase(equinixv1.ElasticIPPhaseWaiting)
		r.Requeue(refusedRetry)
		return nil
	}
	return fmt.Errorf("%s: %w", step, err)
}
