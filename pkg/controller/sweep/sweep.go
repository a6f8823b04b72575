// Package sweep periodically compares what Equinix Metal has with what the
// cluster expects, with one paginated device list per project:
//   - orphans: devices tagged with this cluster's ID that no Instance claims
//     are reported, and deleted once older than the grace period (unless dry
//     run). Devices without the tag are never touched.
//   - drift: a joined Instance whose device is no longer there is marked, so
//     its pool replaces it. Joined Instances make no Metal call of their own,
//     so this list is what notices.
//   - VLANs this cluster created that nothing uses any more are deleted.
package sweep

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instance"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/vlans"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Sweeper runs the sweep.
type Sweeper struct {
	deps      *common.Deps
	instances *instance.Handler
	ctx       context.Context
	now       func() time.Time
}

// Register starts the sweep loop; it runs only on the leader, like every
// controller, once the caches have synced.
func Register(ctx context.Context, deps *common.Deps) error {
	s := &Sweeper{deps: deps, instances: instance.New(ctx, deps), ctx: ctx, now: time.Now}
	go func() {
		if !waitForCaches(ctx, deps) {
			return
		}
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := s.Sweep(ctx); err != nil {
				logrus.Warnf("device sweep: %v", err)
			}
		}, deps.Cfg.OrphanSweepInterval)
	}()
	return nil
}

func waitForCaches(ctx context.Context, deps *common.Deps) bool {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return deps.Instances.Informer().HasSynced() && deps.Pools.Informer().HasSynced() &&
			deps.Secrets.Informer().HasSynced(), nil
	})
	return err == nil
}

// Sweep runs once over every Metal project the pools use.
func (s *Sweeper) Sweep(ctx context.Context) error {
	insts, err := s.deps.Instances.Cache().List(labels.Everything())
	if err != nil {
		return err
	}
	pools, err := s.deps.Pools.Cache().List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []string
	for _, p := range s.projects(pools) {
		if err := s.sweepProject(ctx, p, insts); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

type project struct {
	creds  metal.Credentials
	metros map[string]bool
}

// projects are the distinct credentials of the default Secret and every pool's
// Secret, each with the metros its pools use.
func (s *Sweeper) projects(pools []*v1.InstancePool) []project {
	byKey := map[string]*project{}
	add := func(ref *v1.SecretReference, metro string) {
		creds, err := s.deps.Credentials.For(ref)
		if err != nil {
			return // the pool reports it; nothing can be listed without them
		}
		key := creds.ProjectID + "\x00" + creds.Token
		p, ok := byKey[key]
		if !ok {
			p = &project{creds: creds, metros: map[string]bool{}}
			byKey[key] = p
		}
		if metro != "" {
			p.metros[strings.ToLower(metro)] = true
		}
	}
	add(nil, "")
	for _, pool := range pools {
		add(pool.Spec.CredentialsSecret, pool.Spec.Metro)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]project, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

func (s *Sweeper) sweepProject(ctx context.Context, p project, insts []*v1.Instance) error {
	client, err := s.deps.Metal.Client(p.creds)
	if err != nil {
		return err
	}
	devs, err := client.ListDevices(ctx, metal.ListDevicesOptions{Tag: common.ClusterTag(s.deps.ClusterID), Brief: true})
	if err != nil {
		return fmt.Errorf("listing devices of project %s: %w", p.creds.ProjectID, err)
	}
	byUID := map[string]*v1.Instance{}
	for _, i := range insts {
		byUID[string(i.UID)] = i
	}
	listed := map[string]bool{}
	for i := range devs {
		d := &devs[i]
		listed[d.ID] = true
		if err := s.checkDevice(ctx, client, d, byUID); err != nil {
			return err
		}
	}
	for _, inst := range insts {
		if err := s.checkDrift(ctx, client, inst, listed); err != nil {
			return err
		}
	}
	for metro := range p.metros {
		if _, err := vlans.CollectGarbage(ctx, s.deps, client, metro); err != nil {
			return fmt.Errorf("VLAN cleanup in metro %s: %w", metro, err)
		}
	}
	return nil
}

// checkDevice reports and, past the grace period, deletes a device of this
// cluster that no Instance claims. An Instance claims a device by its UID tag
// unless it recorded a different device (then the tagged one is a duplicate).
func (s *Sweeper) checkDevice(ctx context.Context, client metal.Client, d *metal.Device, byUID map[string]*v1.Instance) error {
	uid, _ := common.TagValue(d.Tags, common.TagInstance)
	if inst, ok := byUID[uid]; ok && (inst.Status.InstanceID == "" || inst.Status.InstanceID == d.ID) {
		return nil
	}
	if d.State == metal.DeviceStateDeprovisioning || d.State == metal.DeviceStateDeleted {
		return nil
	}
	metrics.OrphansFound.Inc()
	age := s.now().Sub(d.CreatedAt)
	pool, _ := common.TagValue(d.Tags, common.TagPool)
	subject := s.eventSubject(pool)
	grace := s.deps.Cfg.OrphanGracePeriod
	switch {
	case s.deps.Cfg.OrphanDryRun:
		s.deps.Recorder.Eventf(subject, corev1.EventTypeWarning, "OrphanDevice",
			"device %s (%s) carries this cluster's tag but no Instance claims it; dry run, not deleting", d.ID, d.Hostname)
		return nil
	case age < grace:
		s.deps.Recorder.Eventf(subject, corev1.EventTypeWarning, "OrphanDevice",
			"device %s (%s) carries this cluster's tag but no Instance claims it; it is deleted once %s old (now %s)",
			d.ID, d.Hostname, grace, age.Round(time.Second))
		return nil
	}
	if err := client.DeleteDevice(ctx, d.ID, false); err != nil && !metal.IsNotFound(err) {
		if metal.ClassOf(err) == metal.ClassBusy {
			return nil
		}
		return fmt.Errorf("deleting orphaned device %s: %w", d.ID, err)
	}
	metrics.OrphansDeleted.Inc()
	s.deps.Recorder.Eventf(subject, corev1.EventTypeWarning, "OrphanDeleted",
		"deleted device %s (%s): it carried this cluster's tag, no Instance claimed it, and it was %s old", d.ID, d.Hostname, age.Round(time.Second))
	return nil
}

// eventSubject is the pool the device was tagged for, or else the addon's
// namespace, so that `kubectl describe` shows the Event somewhere.
func (s *Sweeper) eventSubject(pool string) runtime.Object {
	if p, err := s.deps.Pools.Cache().Get(pool); err == nil {
		return p
	}
	if ns, err := s.deps.K8s.CoreV1().Namespaces().Get(s.ctx, s.deps.Cfg.Namespace, metav1.GetOptions{}); err == nil {
		return ns
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.deps.Cfg.Namespace}}
}

// checkDrift marks a joined Instance of this project whose device the list no
// longer shows, after a direct read confirms it is gone (a device whose tags
// someone edited would be missing from the list but still exist).
func (s *Sweeper) checkDrift(ctx context.Context, client metal.Client, inst *v1.Instance, listed map[string]bool) error {
	id := inst.Status.InstanceID
	if id == "" || listed[id] || inst.DeletionTimestamp != nil || inst.Status.JoinedAt == nil || inst.Status.Status == v1.PhaseFailed {
		return nil
	}
	creds, err := s.deps.Credentials.For(inst.Spec.CredentialsSecret)
	if err != nil || creds.ProjectID != client.ProjectID() {
		return nil
	}
	if _, err := client.GetDevice(ctx, id); !metal.IsNotFound(err) {
		return nil
	}
	return s.instances.MarkDeviceGone(inst)
}
