package chaos

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// otherCluster is the ID of another Harvester cluster sharing the project.
const otherCluster = "chaos-other-cluster"

// foreign are objects the addon does not own; every one must survive the
// run untouched.
type foreign struct {
	devices map[string]string // ID -> what it is
	vlans   map[string]string
	ips     map[string]string
	nodes   []string
}

// createForeign makes, before the controller starts, what an operator or
// another cluster has in the same project and cluster: an untagged device and
// one of another cluster, a VLAN with a VXLAN the pools may ask for (the
// addon may use it but never delete it) and one of another cluster, a
// reserved IP of another cluster, and Nodes without the instance label (one
// named like an Instance, one with the pool label).
func createForeign(t *testing.T, env *framework.Env, client metal.Client, pl plan) foreign {
	t.Helper()
	ctx := env.Ctx
	f := foreign{devices: map[string]string{}, vlans: map[string]string{}, ips: map[string]string{}}
	devices := []struct {
		what, hostname string
		tags           []string
	}{
		{"untagged device", "foreign-untagged", nil},
		{"another cluster's device", "foreign-other-cluster", []string{equinixv1.ClusterTag(otherCluster),
			equinixv1.PoolTag(poolName(pl.Seed, 0)), equinixv1.InstanceTag("0badc0de-0000-4000-8000-000000000000")}},
	}
	for _, d := range devices {
		dev, err := client.CreateDevice(ctx, metal.CreateDeviceRequest{
			Hostname: d.hostname, Plan: "c3.small.x86", Metro: "sg",
			BillingCycle: "hourly", OperatingSystem: "ubuntu_22_04", Tags: d.tags,
		})
		require.NoError(t, err, d.what)
		f.devices[dev.ID] = d.what
	}
	vlans := []struct {
		what string
		req  metal.CreateVLANRequest
	}{
		{"untagged VLAN", metal.CreateVLANRequest{Metro: "sg", VXLAN: pl.ForeignVXLAN, Description: "operator's VLAN"}},
		{"another cluster's VLAN", metal.CreateVLANRequest{Metro: "da", VXLAN: pl.ForeignVXLAN, Description: "other cluster",
			Tags: []string{equinixv1.ClusterTag(otherCluster)}}},
	}
	for _, v := range vlans {
		vlan, err := client.CreateVLAN(ctx, v.req)
		require.NoError(t, err, v.what)
		f.vlans[vlan.ID] = v.what
	}
	ip, err := client.ReserveIPs(ctx, metal.ReserveIPsRequest{Type: "public_ipv4", Quantity: 1, Metro: "sg", Tags: []string{equinixv1.ClusterTag(otherCluster)}})
	require.NoError(t, err, "reserving another cluster's IP")
	f.ips[ip.ID] = "another cluster's reserved IP"

	prefix := runPrefix(pl.Seed)
	nodes := []struct {
		name   string
		labels map[string]string
	}{
		// Named like an Instance of the run's first pool, without the label.
		{prefix + "0-zzzzzzzz", nil},
		{prefix + "0-operator", map[string]string{equinixv1.LabelPool: poolName(pl.Seed, 0)}},
		{prefix + "x-foreign", map[string]string{"kubernetes.io/hostname": prefix + "x-foreign"}},
	}
	for _, n := range nodes {
		_, err := env.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels}}, metav1.CreateOptions{})
		require.NoError(t, err, "creating foreign node %s", n.name)
		f.nodes = append(f.nodes, n.name)
	}
	return f
}

func (f foreign) remove(env *framework.Env) {
	for _, n := range f.nodes {
		_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
	}
}

// removeLeftovers deletes what a run left in the shared cluster — pools and
// Instances (finalizers stripped: their simulator is gone), the Nodes of
// their servers and their console-password Secrets — so the next run starts
// clean. An empty prefix removes every run's.
func removeLeftovers(t *testing.T, env *framework.Env, prefix string) {
	ctx := context.Background()
	mine := func(name string) bool { return strings.HasPrefix(name, prefix) }
	insts := env.Client.EquinixV1().Instances()
	if list, err := insts.List(ctx, metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			if inst := &list.Items[i]; mine(inst.Name) {
				strip(t, inst.Finalizers, func() error {
					inst.Finalizers = nil
					_, err := insts.Update(ctx, inst, metav1.UpdateOptions{})
					return err
				})
				_ = insts.Delete(ctx, inst.Name, metav1.DeleteOptions{})
			}
		}
	}
	pools := env.Client.EquinixV1().InstancePools()
	if list, err := pools.List(ctx, metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			if p := &list.Items[i]; mine(p.Name) {
				strip(t, p.Finalizers, func() error {
					p.Finalizers = nil
					_, err := pools.Update(ctx, p, metav1.UpdateOptions{})
					return err
				})
				_ = pools.Delete(ctx, p.Name, metav1.DeleteOptions{})
			}
		}
	}
	if list, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: equinixv1.LabelInstance}); err == nil {
		for _, n := range list.Items {
			if mine(n.Name) {
				_ = env.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			}
		}
	}
	secs := env.Kube.CoreV1().Secrets(framework.Namespace)
	if list, err := secs.List(ctx, metav1.ListOptions{LabelSelector: equinixv1.LabelInstance}); err == nil {
		for _, s := range list.Items {
			if mine(s.Labels[equinixv1.LabelInstance]) {
				_ = secs.Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
		}
	}
}

// strip removes finalizers with update; a run that needed it has already
// reported the stuck object.
func strip(t *testing.T, finalizers []string, update func() error) {
	if len(finalizers) == 0 {
		return
	}
	if err := update(); err != nil {
		t.Logf("removing finalizers %v: %v", finalizers, err)
	}
}
