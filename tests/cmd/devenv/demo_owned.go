package main

import (
	"context"
	"fmt"
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

// The owned-server demo's rack, as examples/owned-servers.yaml and
// examples/owned-pool.yaml name it: three servers labelled rack=a, one BMC
// Secret, and the pool rack-a of two.
const (
	ownedPool        = "rack-a"
	ownedRackLabel   = "rack=a"
	ownedBMCSecret   = "rack-a-bmc"
	ownedBMCUser     = "admin"
	ownedBMCPassword = "demo-rack-a-pw"
	ownedPoolWait    = 5 * time.Minute
	// ownedWatchEvery is often enough to see each phase an Instance
	// passes, as kubectl get -w would.
	ownedWatchEvery = 200 * time.Millisecond
)

// ownedServers are the demo's servers: what their Inventories say.
var ownedServers = []ownedfleet.Spec{
	{Name: "rack-a-u01", MAC: "b8:ca:3a:6e:01:10", UUID: "4c4c4544-0038-1010-8000-b8ca3a6e0110", Arch: "amd64", Disk: "/dev/sda"},
	{Name: "rack-a-u02", MAC: "b8:ca:3a:6e:02:10", UUID: "4c4c4544-0038-1010-8000-b8ca3a6e0210", Arch: "amd64", Disk: "/dev/sda"},
	{Name: "rack-a-u03", MAC: "b8:ca:3a:6e:03:10", UUID: "4c4c4544-0038-1010-8000-b8ca3a6e0310", Arch: "amd64", Disk: "/dev/nvme0n1"},
}

// ownedDemo runs the controller as the harvester-seeder Addon with
// ownedPools.enabled installs it, three servers behind simulated Redfish
// BMCs that PXE-boot into its boot endpoint and install when powered on
// with a one-time network boot (tests/sim/ownedfleet, as the owned-pool
// tests and benchmark have them), their Inventories as
// examples/owned-servers.yaml has them, and examples/owned-pool.yaml: the
// pool grows to 2, then is scaled to 0, which releases the servers.
func ownedDemo(ctx context.Context, d *demoRun) error {
	ipxeAddr, err := d.startOwnedController(ctx)
	if err != nil {
		return err
	}
	fleet, rack, err := d.startRack(ctx, ipxeAddr)
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range rack {
			_ = r.Close()
		}
	}()
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
	say("what `kubectl get instance -w` shows as each server is claimed, network-boots, installs and joins")
	w := &ownedWatch{fleet: fleet, seen: map[string]string{}, start: time.Now()}
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
		{"joined through the boot endpoint and the simulated install", "get", "nodes"},
	} {
		if err := d.show(ctx, step[0], step[1:]...); err != nil {
			return err
		}
	}
	return d.releaseRack(ctx, w, rack)
}

// releaseRack scales the pool to 0 and waits until every server is
// released: no Instance, no Node, no claim, every server off.
func (d *demoRun) releaseRack(ctx context.Context, w *ownedWatch, rack []*ownedfleet.Redfish) error {
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
	for i, r := range rack {
		d.note("BMC of %s: power %s   # what the simulated BMC has now", ownedServers[i].Name, r.BMC.PowerState())
	}
	// kubectl says so on stderr, out of the summary's order: rackReleased
	// saw the list empty.
	d.note("$ kubectl get nodes   # their Nodes are gone\nNo resources found")
	return nil
}

// rackReleased: every server is off, its Inventory unclaimed and its Node
// deleted.
func (d *demoRun) rackReleased(ctx context.Context, rack []*ownedfleet.Redfish) bool {
	nodes, err := d.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) > 0 {
		return false
	}
	for i, r := range rack {
		inv, err := d.client.MetalV1alpha1().Inventories(namespace).Get(ctx, ownedServers[i].Name, metav1.GetOptions{})
		if err != nil || inv.Labels[equinixv1.LabelClaimedBy] != "" || r.BMC.PowerState() != "Off" {
			return false
		}
	}
	return true
}

// startOwnedController starts the controller a second time, as the
// harvester-seeder Addon with ownedPools.enabled runs it, and returns its
// boot endpoint's address.
func (d *demoRun) startOwnedController(ctx context.Context) (string, error) {
	say("starting the controller a second time, --mode seeder --owned-pools: the harvester-seeder Addon of examples/seeder-addon.yaml")
	addrs := make([]string, 2)
	for i := range addrs {
		var err error
		if addrs[i], err = cluster.FreeAddr(); err != nil {
			return "", err
		}
	}
	httpAddr, ipxeAddr := addrs[0], addrs[1]
	// The release check asks releases.rancher.com for the ISO; the demo
	// stays on this machine, and its servers fetch no ISO.
	seeder, err := start(d.dir, d.detached, "seeder", d.controllerBinary(), "--mode", config.ModeSeeder, "--owned-pools",
		"--kubeconfig", d.kubeconfig, "--http-address", httpAddr,
		"--ipxe-address", ipxeAddr, "--ipxe-public-url", "http://"+ipxeAddr, "--check-release-artifacts=false",
		"--leader-lock-name", "harvester-seeder-owned", "--poll-interval", "1s")
	if err != nil {
		return "", err
	}
	if err := seeder.waitReady(ctx, "http://"+httpAddr+"/readyz"); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "    its boot endpoint (the chain URL the site's DHCP hands iPXE): http://%s/boot/ipxe?mac=${mac}&uuid=${uuid}\n", ipxeAddr)
	return ipxeAddr, nil
}

// startRack starts the three servers, switched off, each behind a
// simulated Redfish BMC, which PXE-boot into the boot endpoint at
// ipxeAddr when powered on with a one-time network boot.
func (d *demoRun) startRack(ctx context.Context, ipxeAddr string) (*ownedfleet.Fleet, []*ownedfleet.Redfish, error) {
	say("starting three servers, switched off, each behind a simulated Redfish BMC; powered on to a network boot, one asks the boot endpoint as iPXE does, installs (%s) and registers its Node", d.installTime)
	logFile, err := os.Create(filepath.Join(d.dir, "servers.log"))
	if err != nil {
		return nil, nil, err
	}
	log := logrus.New()
	log.SetOutput(logFile)
	fleet := ownedfleet.New(ownedfleet.Options{Kube: d.kube,
		Expect:  joinagent.Expect{ServerURL: "https://" + d.vip + ":443", Token: d.joinToken},
		Version: harvesterVersion, Endpoint: "http://" + ipxeAddr, InstallTime: d.installTime,
		Log: log.WithField("component", "owned-servers")})
	fleet.Start(ctx)
	var rack []*ownedfleet.Redfish
	for _, spec := range ownedServers {
		r, err := fleet.AddRedfish(spec, ownedBMCUser, ownedBMCPassword, bmcsim.Options{})
		if err != nil {
			for _, started := range rack {
				_ = started.Close()
			}
			return nil, nil, err
		}
		rack = append(rack, r)
		fmt.Fprintf(os.Stderr, "    %s: BMC %s, NIC %s, disk %s, power %s\n", spec.Name, r.Server.URL, spec.MAC, spec.Disk, r.BMC.PowerState())
	}
	return fleet, rack, nil
}

// ownedWatch prints each Instance's columns as they change, and each
// network boot the servers made, while a step runs.
type ownedWatch struct {
	fleet *ownedfleet.Fleet
	// seen is each Instance's last printed line, and each boot printed.
	seen   map[string]string
	boots  int
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
	results := w.fleet.Results()
	for _, r := range results[w.boots:] {
		outcome := "installed as " + r.Hostname + " on " + r.Device
		if !r.OK {
			outcome = "failed: " + r.Reason
		}
		fmt.Printf("    %s  server %s network-booted: %s; %s\n", at, r.Server, strings.Join(r.Requests, ", "), outcome)
	}
	w.boots = len(results)
	pool, err := d.client.EquinixV1().InstancePools().Get(ctx, ownedPool, metav1.GetOptions{})
	if err != nil {
		pool = nil
	}
	if !done(pool, list.Items) {
		return errNotYet
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// applyInventories writes the BMC Secret and the servers' Inventories as
// examples/owned-servers.yaml has them (each BMC's own CA in caBundle),
// applies them and waits until the controller reached every BMC.
func (d *demoRun) applyInventories(ctx context.Context, rack []*ownedfleet.Redfish) error {
	var file, shown strings.Builder
	secret := fmt.Sprintf(ownedBMCSecretYAML, ownedBMCSecret, namespace, ownedBMCUser, ownedBMCPassword)
	file.WriteString(secret)
	shown.WriteString(strings.Replace(secret, ownedBMCPassword, "<bmc-password>", 1))
	for i, r := range rack {
		s := ownedServers[i]
		inv := fmt.Sprintf(ownedInventoryYAML, s.Name, namespace, r.Server.Host, r.Server.Port, ownedBMCSecret, s.MAC, s.Disk, s.Arch)
		file.WriteString(strings.Replace(inv, "CA_BUNDLE", indentPEM(r.Server.CACertPEM), 1))
		shown.WriteString(strings.Replace(inv, "CA_BUNDLE", "        <the BMC's CA certificate, PEM>\n", 1))
	}
	say("the servers' BMC Secret and Inventories, as examples/owned-servers.yaml has them (the passwords hidden here)")
	fmt.Print(shown.String())
	path := filepath.Join(d.dir, "owned-servers.yaml")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
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

func indentPEM(pem []byte) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(pem), "\n"), "\n") {
		out.WriteString("        " + line + "\n")
	}
	return out.String()
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

// ownedInventoryYAML is an Inventory of examples/owned-servers.yaml:
// %[1]s the server, %[2]s the namespace, %[3]s and %[4]d its BMC, %[5]s
// the BMC Secret, %[6]s the MAC, %[7]s the disk, %[8]s the arch; CA_BUNDLE
// stands for the BMC's CA, indented.
const ownedInventoryYAML = `---
apiVersion: metal.harvesterhci.io/v1alpha1
kind: Inventory
metadata:
  name: %[1]s
  namespace: %[2]s
  labels:
    rack: a
spec:
  baseboardSpec:
    connection:
      host: %[3]s
      port: %[4]d
      insecureTLS: false
      caBundle: |
CA_BUNDLE      authSecretRef: {namespace: %[2]s, name: %[5]s}
  events:
    enabled: true
    pollingInterval: 1h
  managementInterfaceMacAddress: %[6]q
  primaryDisk: %[7]s
  arch: %[8]s
`
