package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// The owned-server demos' rack, as examples/owned-servers.yaml and
// examples/owned-pool.yaml name it: three servers labelled rack=a, one BMC
// Secret, and the pool rack-a of two.
const (
	ownedPool        = "rack-a"
	ownedRackLabel   = "rack=a"
	ownedBMCSecret   = "rack-a-bmc"
	ownedBMCUser     = "admin"
	ownedBMCPassword = "demo-rack-a-pw"
	// ownedPoolWait bounds the pool's growth and its release: the QEMU
	// machines' boots are emulated (TCG) on a machine that may be busy.
	ownedPoolWait = 10 * time.Minute
	// ownedWatchEvery is often enough to see each phase an Instance
	// passes, as kubectl get -w would.
	ownedWatchEvery = 200 * time.Millisecond
)

// ownedServers are the demos' servers: what their Inventories say.
var ownedServers = []ownedfleet.Spec{
	{Name: "rack-a-u01", MAC: "b8:ca:3a:6e:01:10", UUID: "4c4c4544-0038-1010-8000-b8ca3a6e0110", Arch: "amd64", Disk: "/dev/sda"},
	{Name: "rack-a-u02", MAC: "b8:ca:3a:6e:02:10", UUID: "4c4c4544-0038-1010-8000-b8ca3a6e0210", Arch: "amd64", Disk: "/dev/sda"},
	{Name: "rack-a-u03", MAC: "b8:ca:3a:6e:03:10", UUID: "4c4c4544-0038-1010-8000-b8ca3a6e0310", Arch: "amd64", Disk: "/dev/nvme0n1"},
}

// ownedRack is the demo's three servers (ownedServers, in order), each
// behind its BMC, racked by one of the owned demos.
type ownedRack interface {
	// inventories are the servers' Inventories, as applied and as shown
	// (no secret in it).
	inventories() (apply, shown string)
	// off says whether server i is switched off, as its BMC has it now;
	// power says what it has in words.
	off(i int) bool
	power(i int) string
	// transitions are server i's power changes, as its BMC made them.
	transitions(i int) []bmcsim.PowerTransition
	// failure is a network boot of a server that went nowhere, which
	// the fleet does not see: the demo is broken.
	failure() error
	close()
}

// ownedBoot is where the servers reach the boot endpoint, for the
// controller's --ipxe-public-url and --artifacts-mirror: empty, the
// endpoint's own address and the official release locations.
type ownedBoot struct{ publicURL, mirror string }

// runOwned runs the controller as the harvester-seeder Addon with
// ownedPools.enabled installs it, racks the servers (rack, given the boot
// endpoint's address), applies their Inventories and
// examples/owned-pool.yaml: the pool grows to 2, then is scaled to 0,
// which releases the servers.
func (d *demoRun) runOwned(ctx context.Context, boot ownedBoot,
	rackUp func(ctx context.Context, ipxeAddr string) (*ownedfleet.Fleet, ownedRack, error),
) error {
	ipxeAddr, err := d.startOwnedController(ctx, boot)
	if err != nil {
		return err
	}
	fleet, rack, err := rackUp(ctx, ipxeAddr)
	if err != nil {
		return err
	}
	defer rack.close()
	if err := d.applyInventories(ctx, rack); err != nil {
		return err
	}
	if err := d.show(ctx, "examples/owned-join-token.yaml: the environment wrote it with the cluster's join token",
		"-n", namespace, "get", "secret", secretName, "-L", equinixv1.LabelSecret); err != nil {
		return err
	}

	example := filepath.Join(d.root, "charts", "harvester-equinix-addon", "examples", "owned-pool.yaml")
	raw, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	say("applying examples/owned-pool.yaml: two of the three servers installed and joined")
	fmt.Print(string(raw))
	if err := d.kubectl(ctx, nil, "apply", "-f", example); err != nil {
		return err
	}
	say("what `kubectl get instance -w` shows as each server is claimed, network-boots, installs and joins; its BMC's power changes; what each server asked for")
	w := &ownedWatch{fleet: fleet, rack: rack, seen: map[string]string{}, start: time.Now()}
	// What the BMCs did before the pool (switching the servers off as
	// they were racked) is no news.
	for i := range ownedServers {
		w.powers[i] = len(rack.transitions(i))
	}
	err = waitFor(ctx, ownedPoolWait, ownedWatchEvery, "the pool was not ready", func() error {
		return w.pass(ctx, d, func(pool *equinixv1.InstancePool, insts []equinixv1.Instance) bool {
			return pool != nil && pool.Status.Status == equinixv1.PoolPhaseReady && len(insts) == 2
		})
	})
	if err != nil {
		return fmt.Errorf("%w; the servers' boots: %+v", err, fleet.Results())
	}
	d.note("pool %s ready in %ds", ownedPool, int(time.Since(w.start).Seconds()))
	for _, step := range [][]string{
		{"", "get", "instancepool", ownedPool},
		{"", "get", "instance", "-l", equinixv1.LabelPool + "=" + ownedPool, "-o", "wide"},
		{"the third is the spare", "-n", namespace, "get", "inventory", "-l", ownedRackLabel, "-L", equinixv1.LabelClaimedBy},
		{"how each server was told to boot, and why that firmware", "get", "events", "-n", "default",
			"--field-selector", "involvedObject.kind=Instance,reason=" + equinixv1.ReasonNetworkBoot, "-o", "custom-columns=INSTANCE:.involvedObject.name,MESSAGE:.message"},
		{"joined through the boot endpoint and the played install", "get", "nodes"},
	} {
		if err := d.show(ctx, step[0], step[1:]...); err != nil {
			return err
		}
	}
	return d.releaseRack(ctx, w, rack)
}

// ownedFleet plays the installs (and the kubelets after them) of the
// servers, which register their Nodes as Harvester's installer would;
// client is their way to the boot endpoint, nil for the default.
func (d *demoRun) ownedFleet(ctx context.Context, ipxeAddr string, client *http.Client) (*ownedfleet.Fleet, error) {
	logFile, err := os.Create(filepath.Join(d.dir, "servers.log"))
	if err != nil {
		return nil, err
	}
	log := logrus.New()
	log.SetOutput(logFile)
	fleet := ownedfleet.New(ownedfleet.Options{Kube: d.kube,
		Expect:  joinagent.Expect{ServerURL: "https://" + d.vip + ":443", Token: d.joinToken},
		Version: harvesterVersion, Endpoint: "http://" + ipxeAddr, InstallTime: d.installTime, HTTPClient: client,
		Log: log.WithField("component", "owned-servers")})
	fleet.Start(ctx)
	return fleet, nil
}

// releaseRack scales the pool to 0 and waits until every server is
// released: no Instance, no Node, no claim, every server off.
func (d *demoRun) releaseRack(ctx context.Context, w *ownedWatch, rack ownedRack) error {
	say("kubectl scale instancepool/%s --replicas=0: each node into maintenance mode, its server off, its Node deleted, its Inventory freed", ownedPool)
	if err := d.kubectl(ctx, nil, "scale", "instancepool/"+ownedPool, "--replicas=0"); err != nil {
		return err
	}
	w.start = time.Now()
	err := waitFor(ctx, ownedPoolWait, ownedWatchEvery, "the servers were not released", func() error {
		return w.pass(ctx, d, func(_ *equinixv1.InstancePool, insts []equinixv1.Instance) bool {
			return len(insts) == 0 && d.rackReleased(ctx, rack)
		})
	})
	if err != nil {
		return err
	}
	d.note("servers released in %ds", int(time.Since(w.start).Seconds()))
	if err := d.show(ctx, "no claimed-by: free for the next pool; POWER is the BMC's as last read, at the events' polling interval", "-n", namespace, "get", "inventory", "-l", ownedRackLabel, "-L", equinixv1.LabelClaimedBy); err != nil {
		return err
	}
	for i, s := range ownedServers {
		d.note("BMC of %s: %s   # what its BMC has now", s.Name, rack.power(i))
	}
	// kubectl says so on stderr, out of the summary's order: rackReleased
	// saw the list empty.
	d.note("$ kubectl get nodes   # their Nodes are gone\nNo resources found")
	return nil
}

// rackReleased: every server is off, its Inventory unclaimed and its Node
// deleted.
func (d *demoRun) rackReleased(ctx context.Context, rack ownedRack) bool {
	nodes, err := d.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) > 0 {
		return false
	}
	for i, s := range ownedServers {
		inv, err := d.client.MetalV1alpha1().Inventories(namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil || inv.Labels[equinixv1.LabelClaimedBy] != "" || !rack.off(i) {
			return false
		}
	}
	return true
}

// startOwnedController starts the controller a second time, as the
// harvester-seeder Addon with ownedPools.enabled runs it, and returns its
// boot endpoint's address.
func (d *demoRun) startOwnedController(ctx context.Context, boot ownedBoot) (string, error) {
	say("starting the controller a second time, --mode seeder --owned-pools: the harvester-seeder Addon of examples/seeder-addon.yaml")
	addrs := make([]string, 2)
	for i := range addrs {
		var err error
		if addrs[i], err = cluster.FreeAddr(); err != nil {
			return "", err
		}
	}
	httpAddr, ipxeAddr := addrs[0], addrs[1]
	publicURL := boot.publicURL
	if publicURL == "" {
		publicURL = "http://" + ipxeAddr
	}
	// The release check asks releases.rancher.com for the ISO; the demo
	// stays on this machine, and its servers fetch no ISO.
	args := []string{"--mode", config.ModeSeeder, "--owned-pools",
		"--kubeconfig", d.kubeconfig, "--http-address", httpAddr,
		"--ipxe-address", ipxeAddr, "--ipxe-public-url", publicURL, "--check-release-artifacts=false",
		"--leader-lock-name", "harvester-seeder-owned", "--poll-interval", "1s"}
	if boot.mirror != "" {
		args = append(args, "--artifacts-mirror", boot.mirror)
	}
	seeder, err := start(d.dir, d.detached, "seeder", d.controllerBinary(), args...)
	if err != nil {
		return "", err
	}
	if err := seeder.waitReady(ctx, "http://"+httpAddr+"/readyz"); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "    its boot endpoint (the chain URL the site's DHCP hands iPXE): %s/boot/ipxe?mac=${mac}&uuid=${uuid}\n", publicURL)
	return ipxeAddr, nil
}

// ownedWatch prints each Instance's columns as they change, each power
// change of the servers' BMCs and each network boot the servers made,
// while a step runs.
type ownedWatch struct {
	fleet *ownedfleet.Fleet
	rack  ownedRack
	// seen is each Instance's last printed line; boots and powers count
	// what was printed of the boots and of each server's transitions.
	seen   map[string]string
	boots  int
	powers [3]int
	start  time.Time
	header bool
}

// pass prints what changed and reports errNotYet until done holds for
// the pool and its Instances.
func (w *ownedWatch) pass(ctx context.Context, d *demoRun, done func(*equinixv1.InstancePool, []equinixv1.Instance) bool) error {
	if !w.header {
		fmt.Printf("    %5s  %-18s %-13s %-11s %-15s %s\n", "", "NAME", "STATUS", "SERVER", "ADDRESS", "WAITING")
		w.header = true
	}
	list, err := d.client.EquinixV1().Instances().List(ctx, metav1.ListOptions{LabelSelector: equinixv1.LabelPool + "=" + ownedPool})
	if err != nil {
		return errNotYet
	}
	at := fmt.Sprintf("%4ds", int(time.Since(w.start).Seconds()))
	present := map[string]bool{}
	for _, inst := range list.Items {
		present[inst.Name] = true
		line := fmt.Sprintf("%-18s %-13s %-11s %-15s %s", inst.Name, orNone(inst.Status.Status), orNone(inst.Status.Server),
			orNone(inst.Status.Address), inst.Status.WaitingFor)
		if w.seen[inst.Name] != line {
			fmt.Printf("    %s  %s\n", at, line)
			w.seen[inst.Name] = line
		}
	}
	for name := range w.seen {
		if !present[name] {
			fmt.Printf("    %s  %-18s (deleted)\n", at, name)
			delete(w.seen, name)
		}
	}
	for i, s := range ownedServers {
		ts := w.rack.transitions(i)
		for _, t := range ts[w.powers[i]:] {
			fmt.Printf("    %s  BMC of %s: %s\n", at, s.Name, describeTransition(t))
		}
		w.powers[i] = len(ts)
	}
	results := w.fleet.Results()
	var failed []string
	for _, r := range results[w.boots:] {
		outcome := "installed as " + r.Hostname + " on " + r.Device
		if !r.OK {
			outcome = "failed: " + r.Reason
			failed = append(failed, r.Server+": "+r.Reason)
		}
		fmt.Printf("    %s  server %s network-booted: %s; %s\n", at, r.Server, strings.Join(r.Requests, ", "), outcome)
	}
	w.boots = len(results)
	// A failed boot is a broken demo: the pool would wait for it for as
	// long as an install may take.
	if len(failed) > 0 {
		return fmt.Errorf("a server's boot failed: %s", strings.Join(failed, "; "))
	}
	if err := w.rack.failure(); err != nil {
		return err
	}
	pool, err := d.client.EquinixV1().InstancePools().Get(ctx, ownedPool, metav1.GetOptions{})
	if err != nil {
		pool = nil
	}
	if !done(pool, list.Items) {
		return errNotYet
	}
	return nil
}

// describeTransition says what a BMC did to its server's power.
func describeTransition(t bmcsim.PowerTransition) string {
	switch {
	case t.Change == bmcsim.PowerChangeOff:
		return "power off (" + t.Cause + ")"
	case t.NetworkBoot():
		return fmt.Sprintf("power %s with a one-time network boot (%s)", strings.ToLower(string(t.Change)), t.Cause)
	}
	return fmt.Sprintf("power %s, booting as set (%s)", strings.ToLower(string(t.Change)), t.Cause)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// applyInventories writes the BMC Secret and the servers' Inventories as
// examples/owned-servers.yaml has them, applies them and waits until the
// controller reached every BMC.
func (d *demoRun) applyInventories(ctx context.Context, rack ownedRack) error {
	secret := fmt.Sprintf(ownedBMCSecretYAML, ownedBMCSecret, namespace, ownedBMCUser, ownedBMCPassword)
	invs, shownInvs := rack.inventories()
	say("the servers' BMC Secret and Inventories, as examples/owned-servers.yaml has them (the passwords hidden here)")
	fmt.Print(strings.Replace(secret, ownedBMCPassword, "<bmc-password>", 1) + shownInvs)
	path := filepath.Join(d.dir, "owned-servers.yaml")
	if err := os.WriteFile(path, []byte(secret+invs), 0o600); err != nil {
		return err
	}
	if err := d.kubectl(ctx, nil, "apply", "-f", path); err != nil {
		return err
	}
	for _, s := range ownedServers {
		if err := d.waitJSONPath(ctx, time.Minute, "the controller did not reach the BMC of "+s.Name, string(seederv1alpha1.InventoryNodeReady),
			"inventory", "-n", namespace, s.Name, "-o", "jsonpath={.status.status}"); err != nil {
			return err
		}
	}
	return d.show(ctx, "the controller reached each BMC", "-n", namespace, "get", "inventory", "-l", ownedRackLabel)
}

// ownedBMCSecretYAML is examples/owned-servers.yaml's Secret: %[1]s the
// name, %[2]s the namespace, %[3]s and %[4]s the login.
const ownedBMCSecretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: %[1]s
  namespace: %[2]s
type: Opaque
stringData:
  username: %[3]q
  password: %[4]q
`

// ownedInventory is an Inventory of examples/owned-servers.yaml for s:
// annotations and connection are its indented lines, or empty.
func ownedInventory(s ownedfleet.Spec, annotations, connection string) string {
	return fmt.Sprintf(ownedInventoryYAML, s.Name, namespace, annotations, connection, ownedBMCSecret, s.MAC, s.Disk, s.Arch)
}

// ownedInventoryYAML: %[1]s the server, %[2]s the namespace, %[3]s the
// annotations, %[4]s the BMC's connection, %[5]s the BMC Secret, %[6]s
// the MAC, %[7]s the disk, %[8]s the arch.
const ownedInventoryYAML = `---
apiVersion: metal.harvesterhci.io/v1alpha1
kind: Inventory
metadata:
  name: %[1]s
  namespace: %[2]s
  labels:
    rack: a
%[3]sspec:
  baseboardSpec:
    connection:
%[4]s      authSecretRef: {namespace: %[2]s, name: %[5]s}
  events:
    enabled: true
    pollingInterval: 1h
  managementInterfaceMacAddress: %[6]q
  primaryDisk: %[7]s
  arch: %[8]s
`
