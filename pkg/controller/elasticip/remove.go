package elasticip

import (
	"fmt"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Release runs when an ElasticIP is deleted. With the Unassign policy it
// takes the address off the device the addon assigned it to (the target of
// an open move counts: its assign may have landed unanswered); an
// assignment the addon found in place, and the reservation itself, are
// never touched. Until Metal confirms, the finalizer stays: refused
// credentials keep the object, and say so.
func (h *Handler) Release(_ string, eip *equinixv1.ElasticIP) (*equinixv1.ElasticIP, error) {
	if eip == nil {
		return eip, nil
	}
	h.forget(eip.Name)
	metrics.ElasticIPOnVIPHost.DeleteLabelValues(eip.Name, eip.Spec.Address)
	st := eip.Status
	ours := func(a metal.IPAddress) bool {
		return (st.AssignedByAddon && a.ID == st.AssignmentID) || (st.Move != nil && a.DeviceID == st.Move.ToDevice)
	}
	if eip.Spec.DeletionPolicy == equinixv1.ElasticIPKeep || st.ReservationID == "" || (!st.AssignedByAddon && st.Move == nil) {
		return eip, nil
	}
	creds, err := h.credentials.For(eip.Spec.CredentialsSecret)
	if err != nil {
		return eip, fmt.Errorf("elasticip %s: releasing %s needs the credentials: %w", eip.Name, eip.Spec.Address, err)
	}
	if st.ProjectID != "" && creds.ProjectID != st.ProjectID {
		return eip, fmt.Errorf("elasticip %s: Secret %s names project %s, but %s was assigned in project %s: put its credentials back to release it",
			eip.Name, h.credentials.RefFor(eip.Spec.CredentialsSecret), creds.ProjectID, eip.Spec.Address, st.ProjectID)
	}
	c, err := h.metal.Client(creds)
	if err != nil {
		return eip, fmt.Errorf("building the Metal client: %w", err)
	}
	res, err := c.GetIPReservation(h.ctx, st.ReservationID)
	if metal.IsNotFound(err) {
		// Released by someone, with its assignments.
		return eip, nil
	}
	if err != nil {
		return eip, fmt.Errorf("elasticip %s: reading reservation %s: %w", eip.Name, st.ReservationID, err)
	}
	a, ok := res.AssignmentOf(eip.Spec.Address)
	if !ok || !ours(a) {
		return eip, nil
	}
	if err := c.UnassignIP(h.ctx, a.ID); err != nil && !metal.IsNotFound(err) {
		return eip, fmt.Errorf("elasticip %s: unassigning %s from device %s: %w", eip.Name, eip.Spec.Address, a.DeviceID, err)
	}
	common.Eventf(h.recorder, eip, equinixv1.ReasonUnassigned, "unassigned %s from device %s, where the addon had assigned it (deletion policy %s)",
		eip.Spec.Address, a.DeviceID, equinixv1.ElasticIPUnassign)
	return eip, nil
}
