package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// networkTypes are measured in this order.
var networkTypes = []string{
	equinixv1.NetworkTypeLayer3, equinixv1.NetworkTypeHybrid, equinixv1.NetworkTypeHybridBonded,
	equinixv1.NetworkTypeLayer2Bonded, equinixv1.NetworkTypeLayer2Individual,
}

// networking is docs/networking.md's example of each network type: VLANs 1000 and
// 1001 wherever the type carries VLANs.
func networking(typ string) equinixv1.NetworkingConfiguration {
	iface := func(name string, vlans ...string) equinixv1.InterfaceConfiguration {
		return equinixv1.InterfaceConfiguration{Name: name, VLANIDs: vlans}
	}
	nc := equinixv1.NetworkingConfiguration{Type: typ}
	switch typ {
	case equinixv1.NetworkTypeHybrid:
		nc.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{iface("eth1", "1000", "1001")}
	case equinixv1.NetworkTypeHybridBonded, equinixv1.NetworkTypeLayer2Bonded:
		nc.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{iface("bond0", "1000", "1001")}
	case equinixv1.NetworkTypeLayer2Individual:
		nc.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{iface("eth0", "1000"), iface("eth1", "1000", "1001")}
	}
	return nc
}

// newPool is the seed's sample pool (c3.small.x86, two NICs, eth0 managing)
// with count servers of the network type.
func newPool(name, typ string, count int) *equinixv1.InstancePool {
	return &equinixv1.InstancePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: equinixv1.InstancePoolSpec{
			Count: int32(count),
			InstanceTemplate: equinixv1.InstanceTemplate{
				ManagementBondingOptions: map[string]string{"mode": "balance-tlb", "miimon": "100"},
				EquinixMetal: equinixv1.EquinixMetal{
					BillingCycle:            "hourly",
					ManagementInterface:     []string{"eth0"},
					Plan:                    "c3.small.x86",
					Metro:                   "SG",
					NetworkingConfiguration: networking(typ),
				},
			},
		},
	}
}

// poolSet is pools pools named prefix-0 … of perPool servers each.
func poolSet(prefix, typ string, pools, perPool int) []*equinixv1.InstancePool {
	out := make([]*equinixv1.InstancePool, pools)
	for i := range out {
		out[i] = newPool(fmt.Sprintf("%s-%d", prefix, i), typ, perPool)
	}
	return out
}

func (e *env) createPools(ctx context.Context, pools []*equinixv1.InstancePool) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, p := range pools {
		g.Go(func() error {
			if _, err := e.client.EquinixV1().InstancePools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pool %s: %w", p.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// census counts the watched Instances by phase.
type census struct {
	total  int
	done   int
	phases map[string]int
}

func (c census) String() string {
	names := make([]string, 0, len(c.phases))
	for p := range c.phases {
		names = append(names, p)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, p := range names {
		parts = append(parts, fmt.Sprintf("%s %d", p, c.phases[p]))
	}
	return fmt.Sprintf("%d/%d done (%s)", c.done, c.total, strings.Join(parts, ", "))
}

func (e *env) census(done func(*equinixv1.Instance) bool) census {
	c := census{phases: map[string]int{}}
	for _, i := range e.instanceList() {
		c.total++
		phase := i.Status.Status
		if phase == "" {
			phase = "new"
		}
		c.phases[phase]++
		if done(i) {
			c.done++
		}
	}
	return c
}

// managed is the end of provisioning: the node joined and is Ready.
func managed(i *equinixv1.Instance) bool { return i.Status.Status == equinixv1.PhaseManaged }

// converged is managed with the ports in the pool's network type: layer-2
// pools convert only after the join, and that conversion is part of the
// cost of a server.
func converged(i *equinixv1.Instance) bool {
	want := i.Spec.NetworkingConfiguration.Type
	if want == "" {
		want = equinixv1.NetworkTypeLayer3
	}
	return managed(i) && conditions.IsTrue(i.Status.Conditions, equinixv1.InstanceNetworkConfigured) && i.Status.NetworkType == want
}

// waitFor waits until want Instances are done, logging progress every
// interval; it returns how long that took. On timeout the error says how
// far it got.
func (e *env) waitFor(ctx context.Context, what string, want int, done func(*equinixv1.Instance) bool, timeout time.Duration, progress func(census)) (time.Duration, error) {
	start := time.Now()
	lastLog := start
	var last census
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = e.census(done)
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			progress(last)
		}
		return last.done >= want, nil
	})
	if err != nil {
		return time.Since(start), fmt.Errorf("%s: %s after %s: %w", what, last, time.Since(start).Round(time.Second), err)
	}
	return time.Since(start), nil
}

// cleanup removes everything a scenario left in the cluster. The controller
// and the join agent are stopped first, and the simulator is discarded, so
// finalizers are dropped rather than run: cleaning up through the
// controller is not what is measured, and at 2,000 servers it would take
// longer than the scenario.
func (e *env) cleanup(ctx context.Context) error {
	pools, err := e.client.EquinixV1().InstancePools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pools: %w", err)
	}
	insts, err := e.client.EquinixV1().Instances().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, p := range pools.Items {
		g.Go(func() error { return e.forceDelete(gctx, "instancepools", p.Name) })
	}
	for _, i := range insts.Items {
		g.Go(func() error { return e.forceDelete(gctx, "instances", i.Name) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	byLabel := metav1.ListOptions{LabelSelector: equinixv1.LabelInstance}
	if err := e.kube.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel); err != nil {
		return fmt.Errorf("deleting nodes: %w", err)
	}
	if err := e.kube.CoreV1().Secrets(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel); err != nil {
		return fmt.Errorf("deleting console password Secrets: %w", err)
	}
	// Events about cluster-scoped objects land in default.
	for _, ns := range []string{metav1.NamespaceDefault, namespace} {
		if err := e.kube.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("deleting events in %s: %w", ns, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return len(e.instanceList()) == 0, nil
	})
}

// forceDelete drops an object's finalizers and deletes it.
func (e *env) forceDelete(ctx context.Context, resource, name string) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	var err error
	switch resource {
	case "instancepools":
		pools := e.client.EquinixV1().InstancePools()
		if _, err = pools.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
			err = pools.Delete(ctx, name, metav1.DeleteOptions{})
		}
	default:
		insts := e.client.EquinixV1().Instances()
		if _, err = insts.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
			err = insts.Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", resource, name, err)
	}
	return nil
}
