package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/harvestercluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/qemubmc"
)

// The boot-path scenario's server: one QEMU machine under OVMF behind the
// test BMC with virtual media, on QEMU's user network, where the boot
// endpoint is 10.0.2.100 and the AddressPool hands out the static address.
const (
	bootPathPool     = "bootpath"
	bootPathServer   = "bootpath-01"
	bootPathMAC      = "52:54:00:39:b0:01"
	bootPathGuest    = "10.0.2.100:80"
	bootPathAddrPool = "bootpath-network"
	// bootPathWait bounds the machine's boot (OVMF and iPXE emulated).
	bootPathWait = 10 * time.Minute
)

func bootPathMethod() string {
	return "One server people own whose BMC offers virtual media: a QEMU machine under OVMF (UEFI, emulated, no disk, a NIC " +
		"without option ROM on QEMU's user network with restrict=on, its one way out the boot endpoint at 10.0.2.100) behind " +
		"the test BMC tests/sim/qemubmc (the project's Redfish responder driving the machine over QMP: power on starts it with " +
		"the image read from the URL it was given in its CD drive). The controller runs --mode seeder --owned-pools with the " +
		"boot loaders of scripts/boot-loaders and --ipxe-public-url http://10.0.2.100; an AddressPool of 10.0.2.0/24 gives " +
		"the server its static address; no DHCP server anywhere. One InstancePool pinned to VirtualMedia grows 0 → 1 → 0. " +
		"**Claim** is when the benchmark first sees the Instance hold the server (polled every 50 ms); the controller's share " +
		"runs to the power-on command, the BMC's to its first read of the image, the firmware's (OVMF, then the image's iPXE " +
		"applying the static address) to the installer script served; the benchmark then fetches the configuration as the " +
		"installer does and registers the node Ready. **Minimum** per server: InsertMedia, a boot override (Cd, once), a " +
		"power on; EjectMedia at the join; a power off at the release. The machine's console, QEMU's log and its network " +
		"capture are in bootpath/ of the benchmark folder."
}

// runBootPath measures a virtual media boot on QEMU: where the time from
// the claim to the configuration fetched goes, and the BMC commands.
func runBootPath(ctx context.Context, b *bench) (result, error) {
	res := result{details: []string{bootPathMethod(), ""}}
	loaders := os.Getenv("BOOT_LOADERS_DIR")
	if err := qemubmc.Available(); err != nil || loaders == "" {
		// scripts/bench installs both when this scenario is asked for.
		res.rows = append(res.rows, row{figure: "10. Virtual media boot on QEMU", result: fmt.Sprintf("not run: %v, BOOT_LOADERS_DIR %q", err, loaders),
			target: "measured", verdict: verdictInfo})
		return res, nil
	}
	copts := b.controllerOptions(24 * time.Hour)
	copts.extra = append([]string{"--mode", "seeder", "--owned-pools", "--boot-loaders-dir", loaders,
		"--ipxe-public-url", "http://" + strings.TrimSuffix(bootPathGuest, ":80")}, copts.extra...)
	ctrl, err := b.env.startController(ctx, "bootpath", "http://127.0.0.1:9/metal/v1", copts)
	if err != nil {
		return res, err
	}
	defer ctrl.stop()
	network, err := qemubmc.NewBootNetwork(ctrl.ipxeAddr)
	if err != nil {
		return res, err
	}
	defer func() { _ = network.Close() }()
	// Harvester completes the maintenance the controller asks before it
	// switches the joined server off; the join agent plays that side.
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	harvester := joinagent.New(metalsim.New(metalsim.Options{}), joinagent.Options{Kube: b.env.kube, Log: agentLog(b.log)})
	go harvester.EmulateMaintenance(mctx, ownedMaintenancePass)
	dir := filepath.Join(b.env.workDir, "bootpath")
	_ = os.RemoveAll(dir)
	srv, err := qemubmc.New(qemubmc.Options{
		BMC: bmcsim.Options{Username: bmcBenchUser, Password: bmcBenchPassword, VirtualMedia: bmcsim.VirtualMediaOnSystem},
		MAC: bootPathMAC, Dir: dir, Host: network.Addr, Guest: netip.MustParseAddrPort(bootPathGuest),
	})
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.Close() }()
	if err := b.registerBootPathServer(ctx, srv); err != nil {
		return res, err
	}
	defer b.removeBootPathServer()

	claimed, err := b.waitBootPathClaim(ctx)
	if err != nil {
		return res, err
	}
	var script qemubmc.Fetched
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, bootPathWait, true, func(context.Context) (bool, error) {
		var ok bool
		script, ok = network.Script(bootPathMAC)
		return ok, srv.Err()
	})
	if err != nil {
		return res, fmt.Errorf("the machine never fetched its installer script: %w", err)
	}
	configFetched, err := fetchConfig(ctx, network, script.Body)
	if err != nil {
		return res, err
	}
	lives := srv.Lives()
	life := lives[len(lives)-1]
	frames, err := qemubmc.CountFrames(life.Capture(), configFetched)
	if err != nil {
		return res, err
	}
	var inserted time.Time
	for _, m := range srv.MediaChanges() {
		if m.Inserted && inserted.IsZero() {
			inserted = m.At
		}
	}
	if err := b.joinBootPathServer(ctx); err != nil {
		return res, err
	}
	if err := b.scaleOwnedPool(ctx, bootPathPool, 0); err != nil {
		return res, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, ownedPoolWait, true, func(context.Context) (bool, error) {
		return len(b.poolInstances(bootPathPool)) == 0 && !srv.Running(), nil
	}); err != nil {
		return res, fmt.Errorf("the server was never released and off: %w", err)
	}

	cmds := srv.Commands()
	least := 5 // insert, boot override, power on, eject, power off
	verdict := verdictPass
	if len(cmds) > least {
		verdict = verdictMiss
	}
	controller, bmcShare := life.PoweredOn.Sub(claimed), network.ImageRead(bootPathMAC).Sub(life.PoweredOn)
	firmware := script.At.Sub(network.ImageRead(bootPathMAC))
	res.rows = append(res.rows,
		row{figure: "10. Virtual media boot on QEMU: claim → configuration fetched",
			result: fmt.Sprintf("**%s**: controller (claim → power-on command) %s, BMC (→ image read) %s, OVMF and iPXE (→ script served) %s; "+
				"%d frames on the machine's network, **%d DHCP**", seconds(configFetched.Sub(claimed)), seconds(controller), seconds(bmcShare),
				seconds(firmware), frames.Frames, frames.DHCP),
			target: "measured", verdict: verdictInfo},
		row{figure: "10. Virtual media boot on QEMU: BMC commands per server",
			result: fmt.Sprintf("%d vs minimum %d (insert, boot override, power on, eject at the join, power off at the release) → **%.2f×**",
				len(cmds), least, float64(len(cmds))/float64(least)),
			target: "the minimum", verdict: verdict})
	res.details = append(res.details, "BMC commands, in order: `"+strings.Join(cmds, "`, `")+"`",
		"", fmt.Sprintf("Claim → InsertMedia %s, InsertMedia → power on %s.", seconds(inserted.Sub(claimed)), seconds(life.PoweredOn.Sub(inserted))))
	b.log.Infof("boot path: claim → configuration %s (controller %s, BMC %s, firmware %s), %d DHCP, commands %v",
		configFetched.Sub(claimed), controller, bmcShare, firmware, frames.DHCP, cmds)
	return res, nil
}

// registerBootPathServer adds the server's Secret and Inventory, the
// AddressPool and the pool of one.
func (b *bench) registerBootPathServer(ctx context.Context, srv *qemubmc.BMC) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bootPathServer},
		Data: map[string][]byte{seederv1alpha1.SecretUsernameKey: []byte(bmcBenchUser), seederv1alpha1.SecretPasswordKey: []byte(bmcBenchPassword)}}
	if _, err := b.env.kube.CoreV1().Secrets(namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the BMC Secret: %w", err)
	}
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bootPathServer,
		Labels: map[string]string{ownedPoolLabel: bootPathPool}}}
	inv.Spec.ManagementInterfaceMacAddress = bootPathMAC
	inv.Spec.PrimaryDisk = "/dev/vda"
	inv.Spec.BaseboardManagementSpec.Connection = seederv1alpha1.Connection{Host: srv.Server.Host, Port: srv.Server.Port,
		CABundle: string(srv.Server.CACertPEM), AuthSecretRef: corev1.SecretReference{Namespace: namespace, Name: bootPathServer}}
	inv.Spec.Events = seederv1alpha1.Events{PollingInterval: "1h"}
	if _, err := b.env.client.MetalV1alpha1().Inventories(namespace).Create(ctx, inv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Inventory: %w", err)
	}
	ap := &seederv1alpha1.AddressPool{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bootPathAddrPool},
		Spec: seederv1alpha1.AddressSpec{CIDR: "10.0.2.0/24", Gateway: "10.0.2.2", ReservedAddresses: []string{"10.0.2.3", "10.0.2.100"}}}
	if _, err := b.env.client.MetalV1alpha1().AddressPools(namespace).Create(ctx, ap, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the AddressPool: %w", err)
	}
	p := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: bootPathPool}}
	p.Spec.Count = 1
	p.Spec.Servers = &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: map[string]string{ownedPoolLabel: bootPathPool}},
		BootPath: equinixv1.BootPathVirtualMedia, AddressPool: bootPathAddrPool, Nameservers: []string{"10.0.2.3"}}
	if _, err := b.env.client.EquinixV1().InstancePools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pool %s: %w", bootPathPool, err)
	}
	return nil
}

func (b *bench) removeBootPathServer() {
	ctx := context.Background()
	_ = b.env.client.EquinixV1().InstancePools().Delete(ctx, bootPathPool, metav1.DeleteOptions{})
	_ = b.env.client.MetalV1alpha1().Inventories(namespace).Delete(ctx, bootPathServer, metav1.DeleteOptions{})
	_ = b.env.client.MetalV1alpha1().AddressPools(namespace).Delete(ctx, bootPathAddrPool, metav1.DeleteOptions{})
	_ = b.env.kube.CoreV1().Secrets(namespace).Delete(ctx, bootPathServer, metav1.DeleteOptions{})
	_ = b.env.kube.CoreV1().Nodes().Delete(ctx, bootPathServer, metav1.DeleteOptions{})
}

// waitBootPathClaim returns when the pool's Instance was first seen
// holding the server.
func (b *bench) waitBootPathClaim(ctx context.Context) (time.Time, error) {
	var at time.Time
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, ownedPoolWait, true, func(context.Context) (bool, error) {
		for _, i := range b.poolInstances(bootPathPool) {
			if i.Status.Server == bootPathServer {
				at = time.Now()
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return at, fmt.Errorf("the pool never claimed its server: %w", err)
	}
	return at, nil
}

// fetchConfig fetches the configuration the script names, as the
// installer does, and returns when it had it.
func fetchConfig(ctx context.Context, network *qemubmc.BootNetwork, script string) (time.Time, error) {
	u, err := network.HostURL(joinagent.ConfigURL(strings.Fields(script)), bootPathGuest)
	if err != nil {
		return time.Time{}, fmt.Errorf("the script's configuration URL: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("fetching the configuration: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		return time.Time{}, fmt.Errorf("fetching the configuration: %s %v", resp.Status, err)
	}
	return time.Now(), nil
}

// joinBootPathServer registers the server's node Ready, as its kubelet
// does after the install, and waits for the Instance to be managed with
// its image ejected.
func (b *bench) joinBootPathServer(ctx context.Context) error {
	insts := b.poolInstances(bootPathPool)
	if len(insts) != 1 {
		return fmt.Errorf("%d Instances in pool %s", len(insts), bootPathPool)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: bootPathServer, Labels: map[string]string{equinixv1.LabelInstance: insts[0].Name}}}
	if _, err := b.env.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering the node: %w", err)
	}
	if err := harvestercluster.WriteNodeReady(ctx, b.env.kube, bootPathServer, true); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, ownedPoolWait, true, func(context.Context) (bool, error) {
		insts := b.poolInstances(bootPathPool)
		return len(insts) == 1 && insts[0].Status.Status == equinixv1.PhaseManaged && insts[0].Status.BootMediaEjectedAt != nil, nil
	})
}
