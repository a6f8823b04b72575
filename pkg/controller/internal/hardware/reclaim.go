package hardware

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// reclaim acts on a termination time the moment it is seen, not after the
// server is gone: the node goes into Harvester maintenance mode at once (a
// forced drain, so that VMs that cannot migrate do not hold it up; the
// server goes anyway), and the time is recorded in the status, where the
// pool sees it and starts the server's successor.
func (r *run) reclaim(f machine.Facts) error {
	if f.TerminationTime.IsZero() {
		return nil
	}
	st := r.Hardware()
	at := metav1.NewTime(f.TerminationTime)
	if st.TerminationTime != nil && st.TerminationTime.Equal(&at) {
		return nil
	}
	maintained, err := r.maintainNow()
	if err != nil {
		return err
	}
	st = r.Hardware()
	st.TerminationTime = &at
	what := "it has no node yet"
	if maintained != "" {
		what = maintained
	}
	r.Eventf(equinixv1.ReasonReclaimScheduled,
		"the provider takes this server back at %s (a spot server outbid, or a termination time set on it, %s); %s, and its pool starts a successor now",
		at.UTC().Format(time.RFC3339), f.Source, what)
	return nil
}

// maintainNow asks Harvester for the node's maintenance mode (or, on a
// release without it, cordons the node) unless that is under way, and
// says what it did.
func (r *run) maintainNow() (string, error) {
	if r.node == nil {
		return "", nil
	}
	if harvester.MaintenanceUnderWay(r.node) {
		return fmt.Sprintf("node %s is in maintenance mode already", r.node.Name), nil
	}
	version, err := r.s.versions.Version("")
	modeAvailable := err == nil && harvester.HasMaintenanceMode(version)
	updated, err := r.s.nodes.Patch(r.node.Name, types.MergePatchType, harvester.MaintenancePatch(modeAvailable, true))
	if err != nil {
		return "", fmt.Errorf("putting node %s into maintenance mode before its server is taken back: %w", r.node.Name, err)
	}
	r.s.written.Wrote(updated)
	r.node = updated
	if !modeAvailable {
		return fmt.Sprintf("node %s is cordoned (this Harvester release has no maintenance mode; removal drains it)", r.node.Name), nil
	}
	return fmt.Sprintf("node %s is put into maintenance mode (VMs move away)", r.node.Name), nil
}
