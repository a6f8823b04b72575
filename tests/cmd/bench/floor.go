package main

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// The floor is the physical limit of this setup: a bare client that takes the
// same servers from nothing to a Ready node, with what a user gets from the
// controller (a managed Instance, its console Secret, the Node's labels, the
// pool's status), making only the apiserver writes and Metal calls no
// correct controller can do without, through the same apiserver, a simulator
// started the same way, the same client-side limits (one token bucket for
// all its apiserver requests, as the controller's client factory shares one)
// and as many workers as the controller has. It measures what the
// controller's own work costs on top.
//
// Per server: the Instance (create), its create intent (status), the console
// Secret, the create and the device read that sees it active, the ports (the
// planner's steps, read back only where the answer does not show the
// change), the installer and join configuration, the reinstall intent
// (status), the reinstall, the Node's registration, the userdata cleared,
// the join (status), the Node's labels (one patch). Per pool: one adoption
// list, its status when it starts and when it is ready; per metro: the
// VLANs.

// floorResult is one floor run.
type floorResult struct {
	elapsed    time.Duration
	metalCalls int
	// kubeWrites are all its apiserver writes (Instances, Secrets, Nodes,
	// pools), instanceWrites those of Instances.
	kubeWrites     int64
	instanceWrites int64
	serverCount    int
	// work is how long each piece of work held a worker, the floor's
	// counterpart of a handler run.
	work durations
}

type floorRun struct {
	b       *bench
	kube    kubernetes.Interface
	client  versioned.Interface
	metal   metal.Client
	nodes   cache.SharedIndexInformer
	ipxeURL string
	writes  atomic.Int64
	// instanceWrites are the Instance creates and status writes.
	instanceWrites atomic.Int64
	// workers holds as many servers at work as the controller has workers;
	// a server waiting for its device or its Node holds none, as a
	// controller's worker is free while its Instance waits.
	workers chan struct{}
	// heartbeat is the join agent's node heartbeat interval.
	heartbeat time.Duration

	mu sync.Mutex
	// held is how long each piece of work held a worker.
	held   durations
	pools  map[string]*floorPool
	metros map[string]*floorMetro
}

// floorPool is what one server of a pool does for all of them.
type floorPool struct {
	once  sync.Once
	err   error
	vlans map[int]string
}

// floorMetro is the VLANs of a metro, which every pool there shares.
type floorMetro struct {
	once  sync.Once
	err   error
	vlans map[int]string
}

// runFloor runs the floor for servers in pools, the join agent's nodes
// beating at heartbeat.
func (b *bench) runFloor(ctx context.Context, prefix string, servers, poolCount int, heartbeat time.Duration) (floorResult, error) {
	cfg := b.cfg
	world := startMetal(ctx, b.env.kube, b.metalOptions(heartbeat), b.log)
	defer world.stop()
	ipxe := httptest.NewServer(harvester.NewIPXEHandler())
	defer ipxe.Close()

	// The controller's client-side limits: its default --kube-api-qps and
	// --kube-api-burst, and the Metal rate the scenario gives it.
	restCfg := rest.CopyConfig(b.env.rest)
	restCfg.QPS, restCfg.Burst = float32(cfg.kubeQPS), cfg.kubeBurst
	restCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(restCfg.QPS, restCfg.Burst)
	f := &floorRun{b: b, ipxeURL: ipxe.URL, pools: map[string]*floorPool{}, metros: map[string]*floorMetro{}, workers: make(chan struct{}, cfg.threads), heartbeat: heartbeat}
	var err error
	if f.kube, err = kubernetes.NewForConfig(restCfg); err != nil {
		return floorResult{}, err
	}
	if f.client, err = versioned.NewForConfig(restCfg); err != nil {
		return floorResult{}, err
	}
	provider, err := metal.NewProvider(metal.Options{BaseURL: world.url, RequestsPerSecond: cfg.metalRPS, Burst: int(cfg.metalRPS)})
	if err != nil {
		return floorResult{}, err
	}
	if f.metal, err = provider.Client(metal.Credentials{Token: metalToken, ProjectID: projectID}); err != nil {
		return floorResult{}, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	f.nodes = factory.Core().V1().Nodes().Informer()
	factory.Start(watchCtx.Done())
	factory.WaitForCacheSync(watchCtx.Done())
	defer factory.Shutdown()
	defer stopWatch()

	pools := poolSet(prefix, cfg.networkType, poolCount, perPool(servers, poolCount))
	start := time.Now()
	// The pools are created as in the controller's run, by the benchmark's
	// own client.
	if err := b.env.createPools(ctx, pools); err != nil {
		return floorResult{}, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range pools {
		g.Go(func() error { return f.pool(gctx, p) })
	}
	if err := g.Wait(); err != nil {
		return floorResult{}, fmt.Errorf("floor: %w", err)
	}
	res := floorResult{elapsed: time.Since(start), metalCalls: len(apiCalls(world.sim.Requests())),
		kubeWrites: f.writes.Load(), instanceWrites: f.instanceWrites.Load(), serverCount: servers, work: f.held}
	return res, b.env.cleanup(ctx)
}

// pool takes a pool's servers to Ready nodes and reports it, provisioning
// then ready.
func (f *floorRun) pool(ctx context.Context, pool *equinixv1.InstancePool) error {
	stored, err := f.poolStatus(ctx, pool.Name, equinixv1.PoolPhaseProvisioning, 0)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for i := 0; i < int(pool.Spec.Count); i++ {
		g.Go(func() error { return f.server(gctx, stored, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	_, err = f.poolStatus(ctx, pool.Name, equinixv1.PoolPhaseReady, pool.Spec.Count)
	return err
}

func (f *floorRun) poolStatus(ctx context.Context, name, phase string, ready int32) (*equinixv1.InstancePool, error) {
	var out *equinixv1.InstancePool
	err := f.work(ctx, func() error {
		pools := f.client.EquinixV1().InstancePools()
		p, err := pools.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Status, p.Status.Requested, p.Status.Ready = phase, p.Spec.Count, ready
		out, err = pools.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		f.writes.Add(1)
		return err
	})
	return out, err
}

// work runs fn holding a worker.
func (f *floorRun) work(ctx context.Context, fn func() error) error {
	select {
	case f.workers <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-f.workers }()
	start := time.Now()
	err := fn()
	f.mu.Lock()
	f.held = append(f.held, time.Since(start))
	f.mu.Unlock()
	return err
}

// server takes one server from nothing to a Ready node: its work up to the
// reinstall, the wait for its Node, and its work after the join.
func (f *floorRun) server(ctx context.Context, pool *equinixv1.InstancePool, i int) error {
	name := fmt.Sprintf("%s-%08d", pool.Name, i)
	var inst *equinixv1.Instance
	var dev *metal.Device
	if err := f.work(ctx, func() (err error) {
		inst, dev, err = f.install(ctx, pool, name)
		return err
	}); err != nil {
		return err
	}
	if err := f.nodeReady(ctx, name); err != nil {
		return err
	}
	return f.work(ctx, func() error { return f.joined(ctx, pool, inst, dev) })
}

// install takes the server to its reinstall.
func (f *floorRun) install(ctx context.Context, pool *equinixv1.InstancePool, name string) (*equinixv1.Instance, *metal.Device, error) {
	inst, err := f.client.EquinixV1().Instances().Create(ctx, &equinixv1.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{equinixv1.LabelPool: pool.Name}},
		Spec:       equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: *pool.Spec.InstanceTemplate.DeepCopy()},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("creating instance %s: %w", name, err)
	}
	f.writes.Add(1)
	f.instanceWrites.Add(1)
	if inst, err = f.status(ctx, inst, equinixv1.PhasePending); err != nil {
		return nil, nil, err
	}
	if err := f.consoleSecret(ctx, inst); err != nil {
		return nil, nil, err
	}
	p, err := f.adoption(ctx, pool)
	if err != nil {
		return nil, nil, err
	}
	dev, err := f.metal.CreateDevice(ctx, metal.CreateDeviceRequest{
		Hostname: name, Plan: pool.Spec.Plan, Metro: strings.ToLower(pool.Spec.Metro), BillingCycle: "hourly",
		OperatingSystem: "custom_ipxe", Userdata: redact.Sensitive(harvester.ShellScript()),
		Tags: []string{equinixv1.ClusterTag(clusterID), equinixv1.PoolTag(pool.Name), equinixv1.InstanceTag(string(inst.UID))},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the device of %s: %w", name, err)
	}
	if dev, err = f.active(ctx, dev.ID); err != nil {
		return nil, nil, err
	}
	if dev, err = f.ports(ctx, dev, &pool.Spec.InstanceTemplate, network.PhaseInstall, p.vlans); err != nil {
		return nil, nil, err
	}
	// The Instance as stored, with the CRD's defaults (the install disk).
	if err := f.configure(ctx, dev, name, &inst.Spec.InstanceTemplate); err != nil {
		return nil, nil, err
	}
	if inst, err = f.status(ctx, inst, equinixv1.PhaseInstalling); err != nil {
		return nil, nil, err
	}
	script, err := harvester.InstallerScriptURL(f.ipxeURL, harvesterVersion, equinixv1.BootModeReinstall, pool.Spec.ManagementBondingOptions)
	if err != nil {
		return nil, nil, err
	}
	if err := f.metal.Reinstall(ctx, dev.ID, metal.ReinstallRequest{OperatingSystem: "custom_ipxe", IPXEScriptURL: script,
		PreserveData: true, DeprovisionFast: true}); err != nil {
		return nil, nil, fmt.Errorf("reinstalling %s: %w", name, err)
	}
	return inst, dev, nil
}

// joined finishes a server whose Node is Ready.
func (f *floorRun) joined(ctx context.Context, pool *equinixv1.InstancePool, inst *equinixv1.Instance, dev *metal.Device) error {
	empty := redact.Sensitive("")
	if _, err := f.metal.UpdateDevice(ctx, dev.ID, metal.DeviceUpdate{Userdata: &empty}); err != nil {
		return fmt.Errorf("clearing the userdata of %s: %w", inst.Name, err)
	}
	if network.IsLayer2(pool.Spec.NetworkingConfiguration.Type) {
		p, err := f.adoption(ctx, pool)
		if err != nil {
			return err
		}
		if _, err = f.ports(ctx, dev, &pool.Spec.InstanceTemplate, network.PhaseJoined, p.vlans); err != nil {
			return err
		}
	}
	if _, err := f.status(ctx, inst, equinixv1.PhaseManaged); err != nil {
		return err
	}
	// The Node's labels and provider ID, as the controller sets them.
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q,%q:%q,%q:%q}},"spec":{"providerID":"equinixmetal://%s"}}`,
		equinixv1.LabelPool, pool.Name, equinixv1.LabelDeviceID, dev.ID, equinixv1.LabelInstanceType, pool.Spec.Plan,
		"topology.kubernetes.io/region", strings.ToLower(pool.Spec.Metro), dev.ID)
	_, err := f.kube.CoreV1().Nodes().Patch(ctx, inst.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("labelling node %s: %w", inst.Name, err)
	}
	f.writes.Add(1)
	return nil
}

// consoleSecret keeps the console password of the server's rancher user.
func (f *floorRun) consoleSecret(ctx context.Context, inst *equinixv1.Instance) error {
	controller := true
	_, err := f.kube.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: inst.Name + "-console", Namespace: namespace,
			Labels: map[string]string{equinixv1.LabelSecret: equinixv1.SecretConsole, equinixv1.LabelInstance: inst.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: equinixv1.SchemeGroupVersion.String(), Kind: "Instance",
				Name: inst.Name, UID: inst.UID, Controller: &controller}}},
		Data: map[string][]byte{"password": []byte("floor-console-password"), "username": []byte("rancher")},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("console Secret of %s: %w", inst.Name, err)
	}
	f.writes.Add(1)
	return nil
}

// status writes the phase: an intent before the create and the reinstall,
// the join at the end.
func (f *floorRun) status(ctx context.Context, inst *equinixv1.Instance, phase string) (*equinixv1.Instance, error) {
	inst = inst.DeepCopy()
	inst.Status.Status = phase
	out, err := f.client.EquinixV1().Instances().UpdateStatus(ctx, inst, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", inst.Name, err)
	}
	f.writes.Add(1)
	f.instanceWrites.Add(1)
	return out, nil
}

// nodeReady waits for the server's Node to be Ready, from the Node watch:
// at most a few heartbeats once the install is done.
func (f *floorRun) nodeReady(ctx context.Context, name string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, max(2*time.Minute, 5*f.heartbeat), true, func(context.Context) (bool, error) {
		obj, ok, err := f.nodes.GetStore().GetByKey(name)
		if err != nil || !ok {
			return false, err
		}
		ready := harvester.NodeReadyCondition(obj.(*corev1.Node))
		return ready != nil && ready.Status == corev1.ConditionTrue, nil
	})
}

// durations are the lengths of pieces of work, for their percentiles.
type durations []time.Duration

// quantile is the q-quantile (nearest rank) in seconds, NaN when empty.
func (d durations) quantile(q float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)].Seconds()
}
