package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/vlans"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// seenDevices is what one sweep found across every project.
type seenDevices struct {
	ids, hostnames map[string]bool
	// incomplete is set when a project could not be listed: absence from
	// the lists then proves nothing.
	incomplete bool
}

func newSeenDevices() *seenDevices {
	return &seenDevices{ids: map[string]bool{}, hostnames: map[string]bool{}}
}

func (s *Sweeper) sweepProject(ctx context.Context, p *project, insts []*equinixv1.Instance, seen *seenDevices) error {
	client, err := s.metal.Client(*p.creds)
	if err != nil {
		return err
	}
	devs, err := client.ListDevices(ctx, metal.ListDevicesOptions{Tag: equinixv1.ClusterTag(s.clusterID), Brief: true})
	if err != nil {
		return fmt.Errorf("listing devices of project %s: %w", p.id, err)
	}
	byUID := map[string]*equinixv1.Instance{}
	for _, i := range insts {
		byUID[string(i.UID)] = i
	}
	listed := map[string]bool{}
	for i := range devs {
		d := &devs[i]
		listed[d.ID] = true
		seen.ids[d.ID] = true
		seen.hostnames[d.Hostname] = true
		if err := s.checkDevice(ctx, client, d, byUID); err != nil {
			return err
		}
	}
	for _, inst := range insts {
		if err := s.checkDrift(ctx, client, inst, listed); err != nil {
			return err
		}
	}
	kept := 0
	for metro := range p.metros {
		_, left, err := vlans.Users{Instances: s.instances.Cache(), Credentials: s.credentials, ClusterID: s.clusterID}.CollectGarbage(ctx, client, metro)
		if err != nil {
			return fmt.Errorf("VLAN cleanup of project %s in metro %s: %w", p.id, metro, err)
		}
		kept += left
	}
	s.forgetIfEmpty(p, len(devs) == 0 && kept == 0)
	return nil
}

// forgetIfEmpty drops a project from the ledger once nothing of the addon
// has been left in it for longer than a lost create may take to land, and
// no pool or Instance (nor the default Secret) names it: only a pool naming
// it again, which records it again, makes anything there.
func (s *Sweeper) forgetIfEmpty(p *project, empty bool) {
	if !empty || !p.recorded || p.inUse {
		delete(s.emptySince, p.id)
		return
	}
	since, ok := s.emptySince[p.id]
	if !ok {
		s.emptySince[p.id] = s.now()
		return
	}
	if s.now().Sub(since) < 2*s.settings.MetalTimeout {
		return
	}
	if err := s.ledger.Forget(p.id); err != nil {
		logrus.Warnf("device sweep: %v", err)
		return
	}
	delete(s.emptySince, p.id)
}

// checkDevice reports and, past the grace period, deletes a device of this
// cluster that no Instance claims. An Instance claims a device by its UID tag
// unless it recorded a different device (then the tagged one is a duplicate).
func (s *Sweeper) checkDevice(ctx context.Context, client metal.Client, d *metal.Device, byUID map[string]*equinixv1.Instance) error {
	uid, _ := equinixv1.TagValue(d.Tags, equinixv1.TagInstance)
	if inst, ok := byUID[uid]; ok && (inst.Status.InstanceID == "" || inst.Status.InstanceID == d.ID) {
		return nil
	}
	if d.State == metal.DeviceStateDeprovisioning || d.State == metal.DeviceStateDeleted {
		return nil
	}
	metrics.OrphansFound.Inc()
	age := s.now().Sub(d.CreatedAt)
	pool, _ := equinixv1.TagValue(d.Tags, equinixv1.TagPool)
	about := s.involvedObject(pool)
	grace := s.settings.GracePeriod
	switch {
	case s.settings.DryRun:
		common.Eventf(s.recorder, about, equinixv1.ReasonOrphanDevice,
			"device %s (%s) carries this cluster's tag but no Instance claims it; dry run, not deleting", d.ID, d.Hostname)
		return nil
	case age < grace:
		common.Eventf(s.recorder, about, equinixv1.ReasonOrphanDevice,
			"device %s (%s) carries this cluster's tag but no Instance claims it; it is deleted once %s old (now %s)",
			d.ID, d.Hostname, grace, age.Round(time.Second))
		return nil
	}
	if err := client.DeleteDevice(ctx, d.ID, false); err != nil && !metal.IsNotFound(err) {
		if failure.ClassOf(err) == failure.Busy {
			return nil
		}
		return fmt.Errorf("deleting orphaned device %s: %w", d.ID, err)
	}
	metrics.OrphansDeleted.Inc()
	common.Eventf(s.recorder, about, equinixv1.ReasonOrphanDeleted,
		"deleted device %s (%s): it carried this cluster's tag, no Instance claimed it, and it was %s old", d.ID, d.Hostname, age.Round(time.Second))
	return nil
}

// involvedObject is the pool the device was tagged for, or else the addon's
// namespace, so that `kubectl describe` shows the Event somewhere.
func (s *Sweeper) involvedObject(pool string) runtime.Object {
	if pool != "" {
		if p, err := s.pools.Get(pool); err == nil {
			return p
		}
	}
	ns, err := s.namespaces.Get(s.ctx, s.settings.Namespace, metav1.GetOptions{})
	if err == nil {
		return ns
	}
	logrus.Debugf("device sweep: reading namespace %s for an Event: %v", s.settings.Namespace, err)
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.settings.Namespace}}
}

// checkDrift marks a joined Instance of this project whose device the list no
// longer shows, after a direct read confirms it is gone (a device whose tags
// someone edited would be missing from the list but still exist).
func (s *Sweeper) checkDrift(ctx context.Context, client metal.Client, inst *equinixv1.Instance, listed map[string]bool) error {
	id := inst.Status.InstanceID
	if id == "" || listed[id] || inst.DeletionTimestamp != nil || inst.Status.JoinedAt == nil || inst.Status.Status == equinixv1.PhaseFailed {
		return nil
	}
	if s.projectOf(inst) != client.ProjectID() {
		// Only the project the device was made in can say it is gone.
		return nil
	}
	if _, err := client.GetDevice(ctx, id); !metal.IsNotFound(err) {
		return nil
	}
	return s.drift.MarkDeviceGone(inst)
}

// projectOf is the project an Instance's device was made in: the recorded
// one, or for an Instance made before projects were recorded, its Secret's.
func (s *Sweeper) projectOf(inst *equinixv1.Instance) string {
	if inst.Status.ProjectID != "" {
		return inst.Status.ProjectID
	}
	creds, err := s.credentials.For(inst.Spec.CredentialsSecret)
	if err != nil {
		return ""
	}
	return creds.ProjectID
}
