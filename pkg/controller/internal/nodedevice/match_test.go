package nodedevice

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metaltest"
)

const project = "7a1d1a3e-0000-4000-8000-00000000aa01"

type instances map[string]*equinixv1.Instance

func (i instances) Get(name string) (*equinixv1.Instance, error) {
	if inst, ok := i[name]; ok {
		return inst, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "instances"}, name)
}

func node(name string, addrs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, Labels: map[string]string{}}}
	for _, a := range addrs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	return n
}

func device(t *testing.T, c metal.Client, hostname string) *metal.Device {
	t.Helper()
	ctx := context.Background()
	d, err := c.CreateDevice(ctx, metal.CreateDeviceRequest{Hostname: hostname, Plan: "c3.small.x86", Metro: "da",
		OperatingSystem: "ubuntu_22_04", BillingCycle: "hourly"})
	require.NoError(t, err)
	got, err := c.GetDevice(ctx, d.ID)
	require.NoError(t, err)
	require.NotEmpty(t, got.PublicIPv4())
	return got
}

func unmatchedMessage(t *testing.T, err error) string {
	t.Helper()
	e, ok := conditions.AsError(err)
	require.True(t, ok, "want an unmatched report, got %v", err)
	assert.Equal(t, equinixv1.ReasonHostUnmatched, e.Reason)
	return e.Message
}

func TestMatch(t *testing.T) {
	ctx := context.Background()
	sim, c := metaltest.NewClient(t, "tok", project)
	first := device(t, c, "harvester-1")
	other := device(t, c, "other")
	insts := instances{"pool-abc": {ObjectMeta: metav1.ObjectMeta{Name: "pool-abc"},
		Status: equinixv1.InstanceStatus{InstanceID: "d0000000-0000-4000-8000-000000000001", ProjectID: project}}}
	m := NewMatcher(insts)

	t.Run("the addon's own node, by its Instance, without a call", func(t *testing.T) {
		sim.ResetRequests()
		n := node("pool-abc", "192.0.2.1")
		n.Labels[equinixv1.LabelInstance] = "pool-abc"
		got, err := m.Match(ctx, c, n)
		require.NoError(t, err)
		assert.Equal(t, Match{DeviceID: "d0000000-0000-4000-8000-000000000001", By: ByInstance}, got)
		assert.Empty(t, sim.Requests())
	})

	t.Run("the first node, by its address; remembered while the node stays", func(t *testing.T) {
		sim.ResetRequests()
		n := node("harvester-1", first.PublicIPv4())
		got, err := m.Match(ctx, c, n)
		require.NoError(t, err)
		assert.Equal(t, Match{DeviceID: first.ID, By: ByAddress}, got)
		_, err = m.Match(ctx, c, n)
		require.NoError(t, err)
		assert.Len(t, sim.RequestsFor(metalsim.OpFindProjectDevices), 1)
	})

	t.Run("by the person's annotation when no address matches", func(t *testing.T) {
		n := node("harvester-2", "192.0.2.7")
		n.Annotations[equinixv1.AnnotationDeviceID] = other.ID
		got, err := m.Match(ctx, c, n)
		require.NoError(t, err)
		assert.Equal(t, Match{DeviceID: other.ID, By: ByAnnotation}, got)
	})

	t.Run("never guessed", func(t *testing.T) {
		sim.ResetRequests()
		msg := unmatchedMessage(t, second(m.Match(ctx, c, node("stranger", "192.0.2.9"))))
		assert.Contains(t, msg, "kubectl annotate node stranger equinix.harvesterhci.io/device-id=<device ID>")
		unmatchedMessage(t, second(m.Match(ctx, c, node("stranger", "192.0.2.9"))))
		assert.Empty(t, sim.Requests(), "a node that matched nothing is remembered too")

		n := node("typo", "192.0.2.10")
		n.Annotations[equinixv1.AnnotationDeviceID] = "6d3c1d0e-0000-4000-8000-00000000beef"
		assert.Contains(t, unmatchedMessage(t, second(m.Match(ctx, c, n))), "names device 6d3c1d0e-0000-4000-8000-00000000beef, which project")

		both := node("both", first.PublicIPv4(), other.PublicIPv4())
		assert.Contains(t, unmatchedMessage(t, second(m.Match(ctx, c, both))), "several devices")
	})

	t.Run("an Instance in another project is reported", func(t *testing.T) {
		insts["pool-xyz"] = &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "pool-xyz"},
			Status: equinixv1.InstanceStatus{InstanceID: "d0000000-0000-4000-8000-000000000002", ProjectID: "elsewhere"}}
		n := node("pool-xyz", "192.0.2.11")
		n.Labels[equinixv1.LabelInstance] = "pool-xyz"
		assert.Contains(t, unmatchedMessage(t, second(m.Match(ctx, c, n))), "is in project elsewhere")
	})

	t.Run("a device gone is forgotten", func(t *testing.T) {
		now := time.Now()
		m.now = func() time.Time { return now }
		require.NoError(t, sim.DeleteDeviceOutOfBand(first.ID))
		n := node("harvester-1", first.PublicIPv4())
		got, err := m.Match(ctx, c, n)
		require.NoError(t, err, "remembered")
		assert.Equal(t, first.ID, got.DeviceID)
		m.Forget(project, "harvester-1")
		_, err = m.Match(ctx, c, n)
		unmatchedMessage(t, err)
	})
}

func second[T any](_ T, err error) error { return err }
