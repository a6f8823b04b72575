package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// instance is an Instance of pool web with UID "uid-<name>"; mods shape it.
func instance(name string, mods ...func(*equinixv1.Instance)) *equinixv1.Instance {
	i := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	i.Spec.PoolName, i.Spec.Plan, i.Spec.Metro = "web", "c3.small.x86", "da"
	for _, m := range mods {
		m(i)
	}
	return i
}

// recorded is an Instance that recorded the device of hostname.
func recorded(hostname string) func(*equinixv1.Instance) {
	return func(i *equinixv1.Instance) { i.Status.InstanceID = "{" + hostname + "}" }
}

// joined is an Instance whose node joined, in the project it recorded.
func joined(project string) func(*equinixv1.Instance) {
	return func(i *equinixv1.Instance) {
		at := metav1.NewTime(now.Add(-time.Hour))
		i.Status.JoinedAt, i.Status.ProjectID, i.Status.Status = &at, project, equinixv1.PhaseManaged
	}
}

// ours are the tags of this cluster's devices, with extra ones.
func ours(extra ...string) []string {
	return append([]string{equinixv1.ClusterTag(clusterID)}, extra...)
}

// claimedBy is the tag of the Instance name's device.
func claimedBy(name string) string { return equinixv1.InstanceTag("uid-" + name) }

func pool(name string) *equinixv1.InstancePool {
	return &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// poolIn is a pool in metro of the project Secret secret names.
func poolIn(name, secret, metro string) *equinixv1.InstancePool {
	p := pool(name)
	p.Spec.CredentialsSecret, p.Spec.Metro = &equinixv1.SecretReference{Name: secret}, metro
	return p
}

// deviceOutcome is what a sweep leaves of project A's devices, which it
// asked the API to delete, and what it said.
type deviceOutcome struct {
	Devices []string
	Deletes []string
	Events  []string
	Err     string
}

func (w *world) sweep() string {
	err := w.s.Sweep(context.Background())
	if err == nil {
		return ""
	}
	return names(w.ids).Replace(err.Error())
}

func TestSweepOrphanDevices(t *testing.T) {
	cases := []struct {
		name     string
		given    given
		expected deviceOutcome
	}{
		{name: "a device its Instance recorded is left alone",
			given: given{pools: []*equinixv1.InstancePool{pool("web")},
				devices:   []device{{hostname: "web-1", tags: ours(claimedBy("web-1"), equinixv1.PoolTag("web")), age: 3 * time.Hour}},
				instances: []*equinixv1.Instance{instance("web-1", recorded("web-1"))}},
			expected: deviceOutcome{Devices: []string{"web-1"}, Deletes: []string{}, Events: []string{}}},
		{name: "a create in flight is never swept, however old",
			given: given{pools: []*equinixv1.InstancePool{pool("web")},
				devices:   []device{{hostname: "web-2", tags: ours(claimedBy("web-2"), equinixv1.PoolTag("web")), age: 3 * time.Hour}},
				instances: []*equinixv1.Instance{instance("web-2")}},
			expected: deviceOutcome{Devices: []string{"web-2"}, Deletes: []string{}, Events: []string{}}},
		{name: "a second device of an Instance that recorded another is a duplicate, deleted past the grace period",
			given: given{pools: []*equinixv1.InstancePool{pool("web")},
				devices: []device{{hostname: "web-1", tags: ours(claimedBy("web-1"), equinixv1.PoolTag("web")), age: 3 * time.Hour},
					{hostname: "web-1-dup", tags: ours(claimedBy("web-1"), equinixv1.PoolTag("web")), age: 2 * time.Hour}},
				instances: []*equinixv1.Instance{instance("web-1", recorded("web-1"))}},
			expected: deviceOutcome{Devices: []string{"web-1"}, Deletes: []string{"web-1-dup"}, Events: []string{
				"Warning OrphanDeleted pool/web: deleted device {web-1-dup} (web-1-dup): it carried this cluster's tag, no Instance claimed it, and it was 2h0m0s old"}}},
		{name: "an orphan younger than the grace period is reported, not deleted",
			given: given{devices: []device{{hostname: "stray", tags: ours(), age: 10 * time.Minute}}},
			expected: deviceOutcome{Devices: []string{"stray"}, Deletes: []string{}, Events: []string{
				"Warning OrphanDevice namespace/harvester-system: device {stray} (stray) carries this cluster's tag but no Instance claims it; it is deleted once 1h0m0s old (now 10m0s)"}}},
		{name: "an orphan of a pool that is gone is deleted, told on the namespace",
			given: given{devices: []device{{hostname: "gone-1", tags: ours(equinixv1.PoolTag("gone"), claimedBy("gone-1")), age: grace}}},
			expected: deviceOutcome{Devices: []string{}, Deletes: []string{"gone-1"}, Events: []string{
				"Warning OrphanDeleted namespace/harvester-system: deleted device {gone-1} (gone-1): it carried this cluster's tag, no Instance claimed it, and it was 1h0m0s old"}}},
		{name: "a dry run reports and never deletes",
			given: given{dryRun: true, pools: []*equinixv1.InstancePool{pool("web")},
				devices: []device{{hostname: "web-9", tags: ours(equinixv1.PoolTag("web")), age: 48 * time.Hour}}},
			expected: deviceOutcome{Devices: []string{"web-9"}, Deletes: []string{}, Events: []string{
				"Warning OrphanDevice pool/web: device {web-9} (web-9) carries this cluster's tag but no Instance claims it; dry run, not deleting"}}},
		{name: "devices without this cluster's tag are never touched",
			given: given{devices: []device{{hostname: "manual", age: 48 * time.Hour},
				{hostname: "other-cluster", tags: []string{equinixv1.ClusterTag("c2"), equinixv1.PoolTag("web")}, age: 48 * time.Hour},
				{hostname: "tag-prefix", tags: []string{equinixv1.ClusterTag(clusterID + "0")}, age: 48 * time.Hour},
				{hostname: "instance-tag-only", tags: []string{claimedBy("vanished")}, age: 48 * time.Hour}}},
			expected: deviceOutcome{Devices: []string{"instance-tag-only", "manual", "other-cluster", "tag-prefix"}, Deletes: []string{}, Events: []string{}}},
		{name: "an orphan still provisioning is left for the next sweep",
			given: given{timings: metalsim.Timings{Provision: 24 * time.Hour},
				devices: []device{{hostname: "slow", tags: ours(), age: 2 * time.Hour}}},
			expected: deviceOutcome{Devices: []string{"slow (provisioning)"}, Deletes: []string{"slow"}, Events: []string{}}},
		{name: "an orphan already being deprovisioned is neither reported nor deleted again",
			given: given{timings: metalsim.Timings{Deprovision: 24 * time.Hour},
				devices: []device{{hostname: "leaving", tags: ours(), age: 2 * time.Hour, deleting: true},
					{hostname: "leaving-young", tags: ours(), age: time.Minute, deleting: true}}},
			expected: deviceOutcome{Devices: []string{"leaving (deprovisioning)", "leaving-young (deprovisioning)"}, Deletes: []string{}, Events: []string{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.given)
			got := deviceOutcome{Err: w.sweep()}
			got.Devices, got.Deletes, got.Events = w.devices(projectA), w.deletes(), w.events.list()
			assert.Equal(t, tc.expected, got)
			assert.Empty(t, w.drift.marked)
		})
	}
}

// A delete the API refuses for a reason other than the device's state is
// returned, and the next sweep tries again.
func TestSweepReturnsAFailedDelete(t *testing.T) {
	w := newWorld(t, given{devices: []device{{hostname: "stray", tags: ours(), age: 2 * time.Hour}}})
	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{metalsim.OpDeleteDevice}, Count: 1})
	assert.Equal(t, deviceOutcome{Devices: []string{"stray"}, Deletes: []string{"stray"}, Events: []string{},
		Err: "deleting orphaned device {stray}: metal DeleteDevice: 403 Forbidden: You are not authorized to view this device"},
		deviceOutcome{Err: w.sweep(), Devices: w.devices(projectA), Deletes: w.deletes(), Events: w.events.list()})

	w.sim.ResetRequests()
	assert.Equal(t, deviceOutcome{Devices: []string{}, Deletes: []string{"stray"}, Events: []string{
		"Warning OrphanDeleted namespace/harvester-system: deleted device {stray} (stray): it carried this cluster's tag, no Instance claimed it, and it was 2h0m0s old"}},
		deviceOutcome{Err: w.sweep(), Devices: w.devices(projectA), Deletes: w.deletes(), Events: w.events.list()})
}

// driftOutcome is which Instances a sweep marked as having lost their
// device, and what it said.
type driftOutcome struct {
	Marked []string
	Events []string
	Err    string
}

func TestSweepMarksDrift(t *testing.T) {
	gone := device{hostname: "gone", tags: ours(claimedBy("web-1")), age: 3 * time.Hour}
	cases := []struct {
		name      string
		given     given
		outOfBand []string // hostnames deleted behind the addon's back
		fault     *metalsim.Fault
		expected  driftOutcome
	}{
		{name: "a joined Instance whose device is gone is marked",
			given:     given{devices: []device{gone}, instances: []*equinixv1.Instance{instance("web-1", recorded("gone"), joined(projectA))}},
			outOfBand: []string{"gone"},
			expected:  driftOutcome{Marked: []string{"web-1"}, Events: []string{}}},
		{name: "an Instance made before projects were recorded is checked in its Secret's project",
			given:     given{devices: []device{gone}, instances: []*equinixv1.Instance{instance("web-1", recorded("gone"), joined(""))}},
			outOfBand: []string{"gone"},
			expected:  driftOutcome{Marked: []string{"web-1"}, Events: []string{}}},
		{name: "a device whose tags someone edited is still there: not marked",
			given:    given{devices: []device{{hostname: "retagged", age: 3 * time.Hour}}, instances: []*equinixv1.Instance{instance("web-1", recorded("retagged"), joined(projectA))}},
			expected: driftOutcome{Marked: []string{}, Events: []string{}}},
		{name: "a device the API will not show is not taken for gone",
			given:     given{devices: []device{gone}, instances: []*equinixv1.Instance{instance("web-1", recorded("gone"), joined(projectA))}},
			outOfBand: []string{"gone"},
			fault:     &metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{metalsim.OpFindDeviceByID}},
			expected:  driftOutcome{Marked: []string{}, Events: []string{}}},
		{name: "an Instance not joined yet is left to its own checks",
			given:     given{devices: []device{gone}, instances: []*equinixv1.Instance{instance("web-1", recorded("gone"))}},
			outOfBand: []string{"gone"},
			expected:  driftOutcome{Marked: []string{}, Events: []string{}}},
		{name: "an Instance being deleted is not marked",
			given: given{devices: []device{gone}, instances: []*equinixv1.Instance{instance("web-1", recorded("gone"), joined(projectA), func(i *equinixv1.Instance) {
				at := metav1.NewTime(now)
				i.DeletionTimestamp = &at
			})}},
			outOfBand: []string{"gone"},
			expected:  driftOutcome{Marked: []string{}, Events: []string{}}},
		{name: "a failed Instance is not marked again",
			given: given{devices: []device{gone}, instances: []*equinixv1.Instance{instance("web-1", recorded("gone"), joined(projectA), func(i *equinixv1.Instance) {
				i.Status.Status = equinixv1.PhaseFailed
			})}},
			outOfBand: []string{"gone"},
			expected:  driftOutcome{Marked: []string{}, Events: []string{}}},
		{name: "only the project the device was made in can say it is gone",
			given:     given{devices: []device{gone}, instances: []*equinixv1.Instance{instance("web-1", recorded("gone"), joined("c0000000-0000-4000-8000-00000000000c"))}},
			outOfBand: []string{"gone"},
			expected: driftOutcome{Marked: []string{}, Events: []string{
				"Warning ProjectUnreachable namespace/harvester-system: the addon made objects in Equinix Metal project c0000000-0000-4000-8000-00000000000c (metros da) but no Secret labelled equinix.harvesterhci.io/secret=credentials holds its credentials any more: devices or VLANs left there cannot be found or released until one does"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.given)
			for _, h := range tc.outOfBand {
				assert.NoError(t, w.sim.DeleteDeviceOutOfBand(w.ids[h]))
			}
			if tc.fault != nil {
				w.sim.InjectFault(*tc.fault)
			}
			got := driftOutcome{Err: w.sweep(), Events: w.events.list(), Marked: append([]string{}, w.drift.marked...)}
			assert.Equal(t, tc.expected, got)
		})
	}
}

// listedThen runs after every device list, before the sweep acts on it.
type listedThen struct {
	metal.Client
	after func()
}

func (c listedThen) ListDevices(ctx context.Context, opts metal.ListDevicesOptions) ([]metal.Device, error) {
	devs, err := c.Client.ListDevices(ctx, opts)
	c.after()
	return devs, err
}

// A device someone deletes between the list and the sweep's delete is gone
// either way: no error.
func TestSweepDeleteOfADeviceAlreadyGone(t *testing.T) {
	w := newWorld(t, given{devices: []device{{hostname: "stray", tags: ours(), age: 2 * time.Hour}}})
	w.s.metal = metal.ProviderFunc(func(creds metal.Credentials) (metal.Client, error) {
		c, err := w.provider.Client(creds)
		return listedThen{Client: c, after: func() { _ = w.sim.DeleteDeviceOutOfBand(w.ids["stray"]) }}, err
	})
	assert.Equal(t, deviceOutcome{Devices: []string{}, Deletes: []string{"stray"}, Events: []string{
		"Warning OrphanDeleted namespace/harvester-system: deleted device {stray} (stray): it carried this cluster's tag, no Instance claimed it, and it was 2h0m0s old"}},
		deviceOutcome{Err: w.sweep(), Devices: w.devices(projectA), Deletes: w.deletes(), Events: w.events.list()})
}
