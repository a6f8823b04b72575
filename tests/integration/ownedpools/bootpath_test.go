package ownedpools

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia/bootmediatest"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// mediaEnv runs the controller with a boot endpoint that serves boot
// images: its loaders and its public URL. It returns the
// endpoint's address.
func mediaEnv(t *testing.T) (*framework.Env, string) {
	t.Helper()
	loaders := bootLoaders(t)
	addr := framework.FreeAddr(t)
	opts := hardwareOpts()
	opts.Configure = func(c *config.Config) {
		configure(c)
		c.IPXEAddress, c.IPXEPublicURL, c.BootLoadersDir = addr, "http://"+addr, loaders
	}
	return framework.New(t, &shared, opts), addr
}

// bootLoaders is a folder of boot loaders for the boot endpoint: the
// smallest files package bootmedia takes (the images are read, not
// booted).
func bootLoaders(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, bootmedia.FileEFIAMD64), bootmediatest.EFIApp(bootmediatest.MachineAMD64), 0o600))
	return dir
}

// addServerWith is addServer with a BMC of these options.
func addServerWith(t *testing.T, env *framework.Env, name, mac string, lbls map[string]string, opts bmcsim.Options) *server {
	t.Helper()
	opts.Username, opts.Password = bmcUser, bmcPassword
	sim, srv := framework.RedfishBMC(t, opts)
	require.NoError(t, sim.SetPowerState("Off"))
	env.CreateBMCSecret(name, bmcUser, bmcPassword)
	inv := framework.RedfishInventory(name, srv)
	inv.Labels = lbls
	inv.Spec.ManagementInterfaceMacAddress = mac
	inv.Spec.PrimaryDisk = "/dev/nvme0n1"
	inv.Spec.Events.PollingInterval = "1h"
	env.CreateInventory(inv)
	require.Eventually(t, func() bool { return env.Inventory(name).Status.Status == seederv1alpha1.InventoryNodeReady }, wait, tick,
		"Inventory %s never reached its BMC", name)
	return &server{name: name, bmc: sim}
}

// commands counts the requests to a BMC that change something besides
// its sessions: virtual media inserts and ejects, boot overrides (PATCH of
// the system) and power actions.
type commands struct{ insert, eject, boot, power int }

func (s *server) commands() (commands, []string) {
	var c commands
	log := s.bmc.RequestLog()
	for _, r := range log {
		switch {
		case strings.HasPrefix(r, "POST ") && strings.Contains(r, "InsertMedia"):
			c.insert++
		case strings.HasPrefix(r, "POST ") && strings.Contains(r, "EjectMedia"):
			c.eject++
		case strings.HasPrefix(r, "PATCH /redfish/v1/Systems/"):
			c.boot++
		case strings.HasPrefix(r, "POST ") && strings.Contains(r, "ComputerSystem.Reset"):
			c.power++
		}
	}
	return c, log
}

// isoImage says whether b is an ISO 9660 image: its primary volume
// descriptor's identifier at sector 16.
func isoImage(b string) bool {
	return len(b) > 0x8006 && b[0x8001:0x8006] == "CD001"
}

// wrongNonce is the image URL with another nonce.
func wrongNonce(t *testing.T, image string) string {
	t.Helper()
	u, err := url.Parse(image)
	require.NoError(t, err)
	parts := strings.Split(u.Path, "/") // "", "boot", nonce, "media.iso"
	require.Len(t, parts, 4, image)
	parts[2] = strings.Repeat("A", len(parts[2]))
	u.Path = strings.Join(parts, "/")
	return u.String()
}

func instanceOn(t *testing.T, env *framework.Env, pool, server string) (equinixv1.Instance, bool) {
	t.Helper()
	for _, i := range instancesOf(t, env, pool) {
		if i.Status.Server == server {
			return i, true
		}
	}
	return equinixv1.Instance{}, false
}

// A pool grows on servers whose BMCs offer virtual media: each BMC is told
// the claim's image URL, which serves an ISO (and refuses another nonce),
// boots it once and powers the server on, one command each. A server
// whose virtual CD holds someone else's media boots from the network, and
// its media stays. The image leaves the virtual CD at the join, and, for a
// server released before it joined, at the release, after its power-off;
// the endpoint refuses the image's URL once the claim closed.
func TestVirtualMediaBootFromClaimToRelease(t *testing.T) {
	env, addr := mediaEnv(t)
	vm := bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem}
	lbls := map[string]string{"rack": "v"}
	joins := addServerWith(t, env, "rack-v-1", mac(70), lbls, vm)
	leaves := addServerWith(t, env, "rack-v-2", mac(71), lbls, vm)
	foreign := addServerWith(t, env, "rack-v-3", mac(72), lbls, vm)
	const theirs = "http://images.example.lan/firmware-update.iso"
	foreign.bmc.SetMedia(bmcsim.MediaSlotCD, theirs)
	createPool(t, env, ownedPool("rack-v", 3, lbls))

	insts := map[string]equinixv1.Instance{}
	require.Eventually(t, func() bool {
		for _, s := range []*server{joins, leaves, foreign} {
			if i, ok := instanceOn(t, env, "rack-v", s.name); ok && i.Status.InstallRequestedAt != nil {
				insts[s.name] = i
			}
		}
		return len(insts) == 3
	}, wait, tick, "the pool never booted its three servers: %v", insts)

	images := map[string]string{}
	for _, s := range []*server{joins, leaves} {
		inst := insts[s.name]
		assert.Equal(t, equinixv1.BootPathVirtualMedia, inst.Status.BootPath, s.name)
		assert.Equal(t, "boot from virtual media", inst.Status.WaitingFor, s.name)
		c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstalling)
		require.NotNil(t, c, s.name)
		assert.Equal(t, equinixv1.ReasonBootMedia, c.Reason, s.name)
		assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonBootPathChosen), s.name)
		media := s.bmc.MediaIn(bmcsim.MediaSlotCD)
		require.True(t, media.Inserted, "%s: no media inserted", s.name)
		require.True(t, strings.HasPrefix(media.Image, "http://"+addr+"/boot/"), "%s: %s", s.name, media.Image)
		images[s.name] = media.Image
		assert.NotContains(t, fmt.Sprintf("%+v", inst.Status), strings.Split(media.Image, "/")[4], "the nonce is never stored")
		// The BMC reads the image, as it does when it starts the server.
		assert.True(t, isoImage(bootGet(t, media.Image, http.StatusOK)), "%s: the image is an ISO", s.name)
		bootGet(t, wrongNonce(t, media.Image), http.StatusNotFound)
		ts := s.bmc.PowerTransitions()
		require.Len(t, ts, 2, "%s: one power command: %+v", s.name, ts)
		assert.Equal(t, "Cd", ts[1].Boot, s.name)
		assert.Equal(t, media.Image, ts[1].Media, "%s started from the claim's image", s.name)
		got, log := s.commands()
		assert.Equal(t, commands{insert: 1, boot: 1, power: 1}, got, "%s: %v", s.name, log)
	}

	// Someone else's media: the network, and their media stays.
	inst := insts[foreign.name]
	assert.Equal(t, equinixv1.BootPathPXE, inst.Status.BootPath)
	assert.Equal(t, bmcsim.Media{Image: theirs, Inserted: true, WriteProtected: true}, foreign.bmc.MediaIn(bmcsim.MediaSlotCD))
	boots, ts := foreign.networkBoots()
	assert.Equal(t, 1, boots, "%+v", ts)
	// Events are written after the status: waited for.
	assert.Eventually(t, func() bool {
		for _, ev := range env.Events(inst.Name) {
			if ev.Reason == equinixv1.ReasonBootPathChosen && strings.Contains(ev.Message, "not VirtualMedia: the BMC's virtual CD holds media the addon did not insert") {
				return true
			}
		}
		return false
	}, wait, tick, "the Event says why not virtual media: %+v", env.Events(inst.Name))
	got, log := foreign.commands()
	assert.Equal(t, commands{boot: 1, power: 1}, got, "%v", log)

	// One server fetches its installer and joins: the image is ejected.
	script := bootGet(t, fmt.Sprintf("http://%s/boot/ipxe?mac=%s&uuid=%s", addr, url.QueryEscape(mac(70)), insts[joins.name].Status.SystemUUID), http.StatusOK)
	bootGet(t, configURLOf(t, script), http.StatusOK)
	env.JoinOwnedServer(ptr(insts[joins.name]))
	env.JoinOwnedServer(ptr(insts[foreign.name]))
	require.Eventually(t, func() bool {
		i, ok := instanceOn(t, env, "rack-v", joins.name)
		return ok && i.Status.BootMediaEjectedAt != nil && !joins.bmc.MediaIn(bmcsim.MediaSlotCD).Inserted
	}, wait, tick, "the image was never ejected at the join")
	assert.True(t, env.EventRecorded(insts[joins.name].Name, equinixv1.ReasonBootMediaEjected))
	bootGet(t, images[joins.name], http.StatusNotFound)
	got, log = joins.commands()
	assert.Equal(t, commands{insert: 1, boot: 1, power: 1, eject: 1}, got, "%v", log)

	// Scaled to nothing: the server that never joined is powered off, then
	// its image ejected; the joined one has nothing left to eject; someone
	// else's media stays.
	scale(t, env, "rack-v", 0)
	require.Eventually(t, func() bool {
		return len(instancesOf(t, env, "rack-v")) == 0
	}, wait, tick, "the Instances were never released")
	assert.False(t, leaves.bmc.MediaIn(bmcsim.MediaSlotCD).Inserted, "ejected at the release")
	ts = leaves.bmc.PowerTransitions()
	assert.Equal(t, bmcsim.PowerChangeOff, ts[len(ts)-1].Change, "powered off: %+v", ts)
	got, log = leaves.commands()
	assert.Equal(t, commands{insert: 1, boot: 1, power: 2, eject: 1}, got, "on, off: %v", log)
	got, log = joins.commands()
	assert.Equal(t, commands{insert: 1, boot: 1, power: 2, eject: 1}, got, "%v", log)
	assert.Equal(t, bmcsim.Media{Image: theirs, Inserted: true, WriteProtected: true}, foreign.bmc.MediaIn(bmcsim.MediaSlotCD))
	got, _ = foreign.commands()
	assert.Zero(t, got.insert+got.eject)
}

// A pool pinned to UefiHttp boots a server whose BMC offers it by
// BootOnceHTTP with the claim's image URL, though it offers virtual media
// too; a pool pinned to VirtualMedia on a BMC without it boots nothing
// and says so with a Warning, until the pin is lifted.
func TestPinnedBootPaths(t *testing.T) {
	env, addr := mediaEnv(t)
	httpBMC := addServerWith(t, env, "rack-h-1", mac(80), map[string]string{"rack": "h"},
		bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem, HTTPBoot: true})
	pxeBMC := addServerWith(t, env, "rack-p-1", mac(81), map[string]string{"rack": "p"}, bmcsim.Options{})

	pinned := ownedPool("rack-h", 1, map[string]string{"rack": "h"})
	pinned.Spec.Servers.BootPath = equinixv1.BootPathUefiHTTP
	createPool(t, env, pinned)
	unmet := ownedPool("rack-p", 1, map[string]string{"rack": "p"})
	unmet.Spec.Servers.BootPath = equinixv1.BootPathVirtualMedia
	createPool(t, env, unmet)

	inst := waitInstance(t, env, "rack-h", "the UEFI HTTP server was never booted", func(i *equinixv1.Instance) bool {
		return i.Status.InstallRequestedAt != nil
	})
	assert.Equal(t, equinixv1.BootPathUefiHTTP, inst.Status.BootPath)
	assert.Equal(t, equinixv1.BootFirmwareUEFI, inst.Status.BootFirmware)
	ts := httpBMC.bmc.PowerTransitions()
	require.Len(t, ts, 2, "%+v", ts)
	assert.Equal(t, "UefiHttp", ts[1].Boot)
	require.True(t, strings.HasPrefix(ts[1].URI, "http://"+addr+"/boot/"), ts[1].URI)
	assert.True(t, isoImage(bootGet(t, ts[1].URI, http.StatusOK)), "the URI serves the image")
	assert.False(t, httpBMC.bmc.MediaIn(bmcsim.MediaSlotCD).Inserted, "no virtual media")
	got, log := httpBMC.commands()
	assert.Equal(t, commands{boot: 1, power: 1}, got, "%v", log)

	inst = waitInstance(t, env, "rack-p", "the unmet pin was never told", func(i *equinixv1.Instance) bool {
		c := conditions.Get(i.Status.Conditions, equinixv1.InstanceInstalling)
		return c != nil && c.Reason == equinixv1.ReasonBootPathUnavailable
	})
	c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstalling)
	assert.Contains(t, c.Message, "offers no virtual CD")
	assert.Empty(t, inst.Status.BootPath)
	require.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonBootPathUnavailable))
	for _, ev := range env.Events(inst.Name) {
		if ev.Reason == equinixv1.ReasonBootPathUnavailable {
			assert.Equal(t, corev1.EventTypeWarning, ev.Type)
		}
	}
	got, log = pxeBMC.commands()
	assert.Equal(t, commands{}, got, "nothing asked of the BMC: %v", log)

	// The pin lifted, the server boots the way it can, and nothing rolls out.
	env.EditPool("rack-p", func(p *equinixv1.InstancePool) { p.Spec.Servers.BootPath = "" })
	booted := waitInstance(t, env, "rack-p", "the server was never booted once unpinned", func(i *equinixv1.Instance) bool {
		return i.Status.InstallRequestedAt != nil
	})
	assert.Equal(t, inst.Name, booted.Name, "the same Instance")
	assert.Equal(t, equinixv1.BootPathPXE, booted.Status.BootPath)
	boots, ts := pxeBMC.networkBoots()
	assert.Equal(t, 1, boots, "%+v", ts)
}

func ptr[T any](v T) *T { return &v }

// A pool of servers whose BMCs offer virtual media, played by the owned
// fleet (each reads the image its BMC was given at a start from Cd, then
// runs what the image's iPXE does), installs and joins with no network
// boot at all, and shrinks: every server ends powered off, free, with
// nothing in its virtual CD, having had one insert, one boot override,
// one power on, one power off and one eject.
func TestVirtualMediaPoolGrowsAndShrinks(t *testing.T) {
	env, fleet, _ := fleetEnv(t)
	rfs := map[string]*ownedfleet.Redfish{}
	for i := 1; i <= 2; i++ {
		spec := ownedfleet.Spec{Name: fmt.Sprintf("rack-m-%d", i), MAC: mac(90 + i),
			UUID: fmt.Sprintf("4c4c4544-0029-1010-8000-b2c04f0000%02d", 90+i), Disk: "/dev/nvme0n1"}
		rf, err := fleet.AddRedfish(spec, bmcUser, bmcPassword, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnManager})
		require.NoError(t, err)
		t.Cleanup(func() { _ = rf.Close() })
		rfs[spec.Name] = rf
		registerInventory(t, env, spec, bmcPassword, framework.RedfishInventory(spec.Name, rf.Server), map[string]string{"rack": "m"})
	}
	createPool(t, env, ownedPool("rack-m", 2, map[string]string{"rack": "m"}))
	require.Eventually(t, func() bool {
		managed := 0
		for _, i := range instancesOf(t, env, "rack-m") {
			if i.Status.Status == equinixv1.PhaseManaged && i.Status.BootMediaEjectedAt != nil {
				managed++
			}
		}
		return managed == 2
	}, wait, tick, "the servers never installed, joined and had their image ejected: %+v", fleet.Results())
	for name, rf := range rfs {
		i, ok := instanceOn(t, env, "rack-m", name)
		require.True(t, ok)
		assert.Equal(t, equinixv1.BootPathVirtualMedia, i.Status.BootPath, name)
		assert.False(t, rf.BMC.MediaIn(bmcsim.MediaSlotCD).Inserted, name)
		res := bootResult(t, fleet, name)
		assert.True(t, res.OK, "%+v", res)
		assert.Contains(t, res.Requests[0], "/boot/<nonce>/media.iso", "the image was read first: %v", res.Requests)
		boots, ts := (&server{name: name, bmc: rf.BMC}).networkBoots()
		assert.Zero(t, boots, "no network boot: %+v", ts)
	}
	scale(t, env, "rack-m", 0)
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "rack-m")) == 0 }, wait, tick)
	for name, rf := range rfs {
		assert.Equal(t, "Off", rf.BMC.PowerState(), name)
		assert.False(t, rf.BMC.MediaIn(bmcsim.MediaSlotCD).Inserted, name)
		got, log := (&server{name: name, bmc: rf.BMC}).commands()
		assert.Equal(t, commands{insert: 1, boot: 1, power: 2, eject: 1}, got, "%s: %v", name, log)
	}
}

// A BMC that refuses to eject the addon's image: at the join, the
// Instance says so (BootMediaEjected=False, a Warning Event) and asks
// again until it can; at the release, the server is powered off and the
// Instance keeps its finalizer on a 403 (Deleting BootMediaEjectFailed)
// until the eject goes through, so no server goes back free with the
// addon's image mounted.
func TestRefusedEjectIsRetriedAndHoldsTheRelease(t *testing.T) {
	env, _ := mediaEnv(t)
	vm := bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem}
	joins := addServerWith(t, env, "rack-e-1", mac(100), map[string]string{"rack": "e"}, vm)
	leaves := addServerWith(t, env, "rack-r-1", mac(101), map[string]string{"rack": "r"}, vm)
	createPool(t, env, ownedPool("rack-e", 1, map[string]string{"rack": "e"}))
	createPool(t, env, ownedPool("rack-r", 1, map[string]string{"rack": "r"}))
	booted := func(i *equinixv1.Instance) bool { return i.Status.InstallRequestedAt != nil }
	inst := waitInstance(t, env, "rack-e", "never booted", booted)
	waitInstance(t, env, "rack-r", "never booted", booted)
	eject := "/redfish/v1/Systems/1/VirtualMedia/CD/Actions/VirtualMedia.EjectMedia"

	refused := joins.bmc.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultServerError, PathPrefix: eject, Method: http.MethodPost})
	env.JoinOwnedServer(&inst)
	got := waitInstance(t, env, "rack-e", "the refused eject was never told", func(i *equinixv1.Instance) bool {
		c := conditions.Get(i.Status.Conditions, equinixv1.InstanceBootMediaEjected)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonBootMediaEjectFailed
	})
	assert.Nil(t, got.Status.BootMediaEjectedAt)
	assert.True(t, joins.bmc.MediaIn(bmcsim.MediaSlotCD).Inserted)
	require.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonBootMediaEjectFailed))
	for _, ev := range env.Events(inst.Name) {
		if ev.Reason == equinixv1.ReasonBootMediaEjectFailed {
			assert.Equal(t, corev1.EventTypeWarning, ev.Type)
		}
	}
	joins.bmc.RemoveFault(refused)
	waitInstance(t, env, "rack-e", "the eject was never asked again", func(i *equinixv1.Instance) bool {
		c := conditions.Get(i.Status.Conditions, equinixv1.InstanceBootMediaEjected)
		return i.Status.BootMediaEjectedAt != nil && c != nil && c.Status == metav1.ConditionTrue
	})
	assert.False(t, joins.bmc.MediaIn(bmcsim.MediaSlotCD).Inserted)

	forbidden := leaves.bmc.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultServerError, Status: http.StatusForbidden, PathPrefix: eject, Method: http.MethodPost})
	scale(t, env, "rack-r", 0)
	held := waitInstance(t, env, "rack-r", "the refused eject never held the release", func(i *equinixv1.Instance) bool {
		c := conditions.Get(i.Status.Conditions, equinixv1.InstanceDeleting)
		return c != nil && c.Reason == equinixv1.ReasonBootMediaEjectFailed
	})
	assert.NotEmpty(t, held.Finalizers, "the finalizer stays on a 403")
	assert.Equal(t, "Off", leaves.bmc.PowerState(), "powered off first")
	assert.True(t, leaves.bmc.MediaIn(bmcsim.MediaSlotCD).Inserted)
	assert.Equal(t, held.Name, env.Inventory(leaves.name).Labels[equinixv1.LabelClaimedBy], "still claimed")
	leaves.bmc.RemoveFault(forbidden)
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "rack-r")) == 0 }, wait, tick, "never released once the eject went through")
	assert.False(t, leaves.bmc.MediaIn(bmcsim.MediaSlotCD).Inserted)
	assert.NotContains(t, env.Inventory(leaves.name).Labels, equinixv1.LabelClaimedBy)
}

// An insert whose answer was lost (the BMC mounted the image, the
// connection dropped before its answer) counts as sent: it is not sent
// again, and the boot from the virtual CD and the power-on follow, once
// each.
func TestLostInsertAnswerIsNotSentTwice(t *testing.T) {
	env, _ := mediaEnv(t)
	s := addServerWith(t, env, "rack-l-1", mac(110), map[string]string{"rack": "l"}, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem})
	lost := s.bmc.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLostAnswer, PathPrefix: "/redfish/v1/Systems/1/VirtualMedia/CD/Actions/VirtualMedia.InsertMedia",
		Method: http.MethodPost, Count: 1})
	createPool(t, env, ownedPool("rack-l", 1, map[string]string{"rack": "l"}))
	inst := waitInstance(t, env, "rack-l", "never booted", func(i *equinixv1.Instance) bool { return i.Status.InstallRequestedAt != nil })
	assert.Equal(t, 1, s.bmc.FaultFired(lost), "the answer was lost")
	assert.Equal(t, equinixv1.BootPathVirtualMedia, inst.Status.BootPath)
	media := s.bmc.MediaIn(bmcsim.MediaSlotCD)
	require.True(t, media.Inserted)
	ts := s.bmc.PowerTransitions()
	require.Len(t, ts, 2, "%+v", ts)
	assert.Equal(t, media.Image, ts[1].Media, "started from the image")
	got, log := s.commands()
	assert.Equal(t, commands{insert: 1, boot: 1, power: 1}, got, "%v", log)
	assert.False(t, env.HasEvent(inst.Name, equinixv1.ReasonBMCFailed), "a lost answer is no refusal: %+v", env.Events(inst.Name))
}
