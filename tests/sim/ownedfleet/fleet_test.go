package ownedfleet

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint/claimstest"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia/bootmediatest"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

var shared cluster.Shared

// Both kinds of simulated BMC can drive a server.
var (
	_ PowerSource = (*bmcsim.BMC)(nil)
	_ PowerSource = (*ipmisim.Sim)(nil)
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

const (
	joinToken = "K10owned-fleet-token::server:abcdef"
	version   = "v1.4.1"
	wait      = 20 * time.Second
	tick      = 20 * time.Millisecond
)

// world is a fleet against the test cluster and a boot endpoint with
// claims of the test's own.
type world struct {
	t      *testing.T
	ctx    context.Context
	kube   kubernetes.Interface
	fleet  *Fleet
	claims *claimstest.Claims
	key    []byte
}

func newWorld(t *testing.T, opts ...bootendpoint.Option) *world {
	c := shared.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	_, hash, err := harvester.GenerateConsolePassword()
	require.NoError(t, err)
	w := &world{t: t, ctx: ctx, kube: kube, key: []byte(strings.Repeat("k", bootendpoint.KeySize)),
		claims: claimstest.New(claimstest.Join{ServerURL: "10.0.0.10", Token: joinToken, PasswordHash: hash, InstallDevice: "/dev/sda"})}
	srv := httptest.NewServer(bootendpoint.NewHandler(w.key, w.claims, opts...))
	t.Cleanup(srv.Close)
	w.fleet = New(Options{Kube: kube, Expect: joinagent.Expect{ServerURL: "https://10.0.0.10:443", Token: joinToken},
		Version: version, Endpoint: srv.URL, InstallTime: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
		Log: logrus.New()})
	w.fleet.Start(ctx)
	return w
}

// server adds spec behind a Redfish BMC and returns the project's own
// client of that BMC.
func (w *world) server(spec Spec, opts ...bmcsim.Options) (*Redfish, bmc.Client) {
	var o bmcsim.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	r, err := w.fleet.AddRedfish(spec, "root", "calvin", o)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { _ = r.Close() })
	c, err := bmc.Dial(w.ctx, r.Endpoint)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { _ = c.Close() })
	return r, c
}

func (w *world) claim(spec Spec, id, instance string) {
	w.claims.Add(claimstest.Claim{Claim: bootendpoint.Claim{ID: id, Instance: instance, Server: spec.Name, MAC: spec.MAC,
		SystemUUID: spec.UUID, Arch: spec.Arch, Version: version}, InstallDevice: spec.Disk})
	w.t.Cleanup(func() { _ = w.kube.CoreV1().Nodes().Delete(context.Background(), spec.Name, metav1.DeleteOptions{}) })
}

func (w *world) netboot(c bmc.Client) {
	_, err := c.BootOnce(w.ctx, bmc.BootNetwork, bmc.BootFirmwareUEFI)
	require.NoError(w.t, err)
	require.NoError(w.t, c.Power(w.ctx, bmc.PowerActionOn))
}

func (w *world) result(server string) Result {
	var r Result
	require.Eventually(w.t, func() bool {
		var ok bool
		r, ok = w.fleet.LastResult(server)
		return ok
	}, wait, tick, "no boot of %s", server)
	return r
}

func (w *world) ready(name string) corev1.ConditionStatus {
	n, err := w.kube.CoreV1().Nodes().Get(w.ctx, name, metav1.GetOptions{})
	if c := harvester.NodeReadyCondition(n); err == nil && c != nil {
		return c.Status
	}
	return ""
}

// A claimed server, told through its BMC to boot once from the network
// and powered on, asks the endpoint as iPXE would, installs the claim's
// arm64 release on its disk and registers its Node, named after the server
// (its Inventory), with the Instance label; power off makes it Unknown, power on (from disk)
// Ready again.
func TestClaimedServerJoins(t *testing.T) {
	w := newWorld(t)
	spec := Spec{Name: "rack1-u07", MAC: "0C:C4:7A:29:00:07", UUID: "4c4c4544-0042-3510-8052-b4c04f4e0007", Arch: "arm64", Disk: "/dev/nvme0n1"}
	_, c := w.server(spec)
	w.claim(Spec{Name: spec.Name, MAC: "0c:c4:7a:29:00:07", UUID: strings.ToUpper(spec.UUID), Arch: "arm64", Disk: "/dev/nvme0n1"}, "uid-joins", "owned-a-joins")
	w.netboot(c)

	r := w.result(spec.Name)
	require.True(t, r.OK, r.Reason)
	assert.Equal(t, "rack1-u07", r.Hostname)
	assert.Equal(t, "/dev/nvme0n1", r.Device)
	assert.Equal(t, "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-arm64.iso", r.ISOURL)
	assert.Equal(t, []string{
		w.endpoint() + "/boot/ipxe?mac=0c%3Ac4%3A7a%3A29%3A00%3A07&uuid=4c4c4544-0042-3510-8052-b4c04f4e0007 200",
		w.endpoint() + "/boot/<nonce>/config.yaml?mac=0c:c4:7a:29:00:07 200",
	}, r.Requests)
	require.Eventually(t, func() bool { return w.ready("rack1-u07") == corev1.ConditionTrue }, wait, tick)
	n, err := w.kube.CoreV1().Nodes().Get(w.ctx, "rack1-u07", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "owned-a-joins", n.Labels[harvester.InstanceLabel])
	assert.Equal(t, "arm64", n.Labels["kubernetes.io/arch"])
	assert.Equal(t, []string{"rack1-u07"}, w.fleet.NodeNames())
	assert.Empty(t, w.claims.Refusals())

	require.NoError(t, c.Power(w.ctx, bmc.PowerActionOff))
	require.Eventually(t, func() bool { return w.ready("rack1-u07") == corev1.ConditionUnknown }, wait, tick)
	assert.Empty(t, w.fleet.NodeNames())
	require.NoError(t, c.Power(w.ctx, bmc.PowerActionOn))
	require.Eventually(t, func() bool { return w.ready("rack1-u07") == corev1.ConditionTrue }, wait, tick)
	assert.Len(t, w.fleet.Results(), 1, "a start from disk installs nothing")
}

func (w *world) endpoint() string { return w.fleet.opts.Endpoint }

// mediaWorld is a world whose boot endpoint serves each claim's boot
// image, made with a stand-in UEFI loader (the image is read, not run).
func mediaWorld(t *testing.T) *world {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, bootmedia.FileEFIAMD64), bootmediatest.EFIApp(bootmediatest.MachineAMD64), 0o600))
	loaders, err := bootmedia.LoadLoaders(dir)
	require.NoError(t, err)
	return newWorld(t, bootendpoint.WithBootMedia(loaders, t.TempDir()))
}

// A claimed server whose BMC mounts the claim's boot image and boots it
// once, from the virtual CD or by the firmware's HTTP boot, reads the
// image as its BMC would, follows the chain URL the image's script holds,
// and installs: no DHCP, no PXE. An image URL with another nonce boots
// nothing.
func TestServerBootsItsImage(t *testing.T) {
	w := mediaWorld(t)
	cd := Spec{Name: "rack2-u01", MAC: "0c:c4:7a:29:01:01", UUID: "4c4c4544-0042-3510-8052-b4c04f4e0101", Disk: "/dev/sda"}
	httpBoot := Spec{Name: "rack2-u02", MAC: "0c:c4:7a:29:01:02", UUID: "4c4c4544-0042-3510-8052-b4c04f4e0102", Disk: "/dev/sda"}
	wrong := Spec{Name: "rack2-u03", MAC: "0c:c4:7a:29:01:03", UUID: "4c4c4544-0042-3510-8052-b4c04f4e0103", Disk: "/dev/sda"}
	image := func(spec Spec, id string) string {
		w.claim(spec, id, "owned-"+spec.Name)
		return w.endpoint() + bootendpoint.MediaPath(w.key, bootendpoint.Claim{ID: id, MAC: spec.MAC})
	}

	_, c := w.server(cd, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnManager})
	media := c.(bmc.MediaClient)
	require.NoError(t, media.InsertMedia(w.ctx, image(cd, "uid-cd")))
	_, err := c.BootOnce(w.ctx, bmc.BootCD, bmc.BootFirmwareUEFI)
	require.NoError(t, err)
	require.NoError(t, c.Power(w.ctx, bmc.PowerActionOn))
	r := w.result(cd.Name)
	require.True(t, r.OK, r.Reason)
	assert.Equal(t, []string{
		w.endpoint() + "/boot/<nonce>/media.iso?mac=0c:c4:7a:29:01:01 200",
		w.endpoint() + "/boot/ipxe?mac=0c%3Ac4%3A7a%3A29%3A01%3A01&uuid=4c4c4544-0042-3510-8052-b4c04f4e0101 200",
		w.endpoint() + "/boot/<nonce>/config.yaml?mac=0c:c4:7a:29:01:01 200",
	}, r.Requests)

	_, c = w.server(httpBoot, bmcsim.Options{HTTPBoot: true})
	require.NoError(t, c.(bmc.MediaClient).BootOnceHTTP(w.ctx, image(httpBoot, "uid-http")))
	require.NoError(t, c.Power(w.ctx, bmc.PowerActionOn))
	r = w.result(httpBoot.Name)
	require.True(t, r.OK, r.Reason)
	assert.Len(t, r.Requests, 3)

	_, c = w.server(wrong, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem})
	stolen := strings.Replace(image(wrong, "uid-wrong"), bootendpoint.Nonce(w.key, "uid-wrong"), bootendpoint.Nonce(w.key, "uid-cd"), 1)
	require.NoError(t, c.(bmc.MediaClient).InsertMedia(w.ctx, stolen))
	_, err = c.BootOnce(w.ctx, bmc.BootCD, bmc.BootFirmwareUEFI)
	require.NoError(t, err)
	require.NoError(t, c.Power(w.ctx, bmc.PowerActionOn))
	r = w.result(wrong.Name)
	assert.False(t, r.OK)
	assert.Contains(t, r.Reason, "answered 404")
	assert.Equal(t, []string{cd.Name, httpBoot.Name}, w.fleet.NodeNames())
}

// A server nobody claimed gets 404 and boots its (empty) disk: no
// configuration, no Node, and the endpoint told of the MAC.
func TestUnclaimedServerGetsNothing(t *testing.T) {
	w := newWorld(t)
	spec := Spec{Name: "rack1-u08", MAC: "0c:c4:7a:29:00:08", Disk: "/dev/sda"}
	_, c := w.server(spec)
	w.netboot(c)
	r := w.result(spec.Name)
	assert.False(t, r.OK)
	assert.Equal(t, "the boot endpoint answered 404: nothing to boot", r.Reason)
	assert.Equal(t, []claimstest.Refusal{{MAC: spec.MAC, Reason: "BootNoOpenClaim"}}, w.claims.Refusals())
	assert.Zero(t, w.claims.ConfigsServed(spec.MAC))
	assert.Empty(t, w.fleet.NodeNames())
}

// What a server of one's own must be given, checked as its install would
// fail: another architecture's installer, another disk.
func TestInstallsThatFail(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name   string
		spec   Spec
		claim  func(Spec) Spec
		reason string
	}{
		{name: "arch", spec: Spec{Name: "u10", MAC: "0c:c4:7a:29:00:10", Disk: "/dev/sda"},
			claim:  func(s Spec) Spec { s.Arch = "arm64"; return s },
			reason: "the script boots kernel https://github.com/harvester/harvester/releases/download/v1.4.1/harvester-v1.4.1-vmlinuz-arm64, not Harvester v1.4.1 for amd64"},
		{name: "disk", spec: Spec{Name: "u11", MAC: "0c:c4:7a:29:00:11", Disk: "/dev/sdb"},
			claim:  func(s Spec) Spec { s.Disk = "/dev/sda"; return s },
			reason: "Harvester install failed: install.device is /dev/sda, not the server's disk /dev/sdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := w.server(tt.spec)
			w.claim(tt.claim(tt.spec), "uid-"+tt.name, "owned-"+tt.name)
			w.netboot(c)
			r := w.result(tt.spec.Name)
			assert.False(t, r.OK)
			assert.Equal(t, tt.reason, r.Reason)
			assert.NotContains(t, r.Reason, joinToken)
		})
	}
	assert.Empty(t, w.fleet.NodeNames())
}

// A server behind a real IPMI BMC (ipmi_sim) follows it as one behind
// the Redfish responder does: the project's client sets the one-time PXE
// boot over IPMI and powers on, and the server installs and joins; a
// power cycle without the override boots the installed disk.
func TestServerBehindIPMI(t *testing.T) {
	w := newWorld(t)
	spec := Spec{Name: "rack2-u01", MAC: "0c:c4:7a:29:01:01", UUID: ipmisim.DefaultUUID, Disk: "/dev/sda"}
	b := w.fleet.RequireIPMI(t, spec, "admin", "ipmi-pw")
	on, err := b.Sim.PowerOn()
	require.NoError(t, err)
	require.False(t, on, "a free server waits powered off")
	c, err := bmc.Dial(w.ctx, b.Endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w.claim(spec, "uid-ipmi", "owned-ipmi")
	w.netboot(c)
	r := w.result(spec.Name)
	require.True(t, r.OK, r.Reason)
	require.Eventually(t, func() bool { return w.ready("rack2-u01") == corev1.ConditionTrue }, wait, tick)
	require.NoError(t, c.Power(w.ctx, bmc.PowerActionOff))
	require.Eventually(t, func() bool { return w.ready("rack2-u01") == corev1.ConditionUnknown }, wait, tick)
	require.NoError(t, c.Power(w.ctx, bmc.PowerActionOn))
	require.Eventually(t, func() bool { return w.ready("rack2-u01") == corev1.ConditionTrue }, wait, tick)
	assert.Len(t, w.fleet.Results(), 1)
	assert.Equal(t, 1, b.Relay.MostSessions(), "the relay sees the client's one session")
}
