package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// ownedServer is one simulated server people own: its BMC, which records
// every request, and its Inventory's name.
type ownedServer struct {
	name string
	bmc  ownedBMC
}

// addOwnedServer starts the server's BMC (switched off) over protocol and
// registers its Secret and Inventory, labelled for the pool that may claim it.
func (b *bench) addOwnedServer(ctx context.Context, fleet *ownedfleet.Fleet, protocol string, i int, pool string) (*ownedServer, error) {
	spec := ownedfleet.Spec{Name: fmt.Sprintf("%s-%02d", pool, i), MAC: fmt.Sprintf("52:54:00:29:%02x:%02x", len(pool), i),
		UUID: fmt.Sprintf("4c4c4544-0029-1010-8000-%012x", 0x29000+len(pool)*0x100+i), Disk: "/dev/nvme0n1"}
	add := addRedfishOwned
	switch protocol {
	case "ipmi":
		add = addIPMIOwned
	case "redfish-media":
		add = addRedfishMediaOwned
	}
	bmc, err := add(fleet, spec)
	if err != nil {
		return nil, err
	}
	s := &ownedServer{name: spec.Name, bmc: bmc}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: spec.Name},
		Data: map[string][]byte{seederv1alpha1.SecretUsernameKey: []byte(bmcBenchUser), seederv1alpha1.SecretPasswordKey: []byte(bmcBenchPassword)}}
	if _, err := b.env.kube.CoreV1().Secrets(namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return s, fmt.Errorf("creating the BMC Secret of %s: %w", spec.Name, err)
	}
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: spec.Name,
		Labels: map[string]string{ownedPoolLabel: pool}}}
	inv.Spec.ManagementInterfaceMacAddress = spec.MAC
	inv.Spec.PrimaryDisk = spec.Disk
	inv.Spec.BaseboardManagementSpec.Connection = bmc.connection()
	inv.Spec.BaseboardManagementSpec.Connection.AuthSecretRef = corev1.SecretReference{Namespace: namespace, Name: spec.Name}
	inv.Spec.Events = seederv1alpha1.Events{PollingInterval: "1h"}
	if _, err := b.env.client.MetalV1alpha1().Inventories(namespace).Create(ctx, inv, metav1.CreateOptions{}); err != nil {
		return s, fmt.Errorf("creating the Inventory of %s: %w", spec.Name, err)
	}
	return s, nil
}

// remove deletes the server's Inventory and Secret and stops its BMC.
func (s *ownedServer) remove(b *bench) {
	ctx := context.Background()
	_ = b.env.client.MetalV1alpha1().Inventories(namespace).Delete(ctx, s.name, metav1.DeleteOptions{})
	_ = b.env.kube.CoreV1().Secrets(namespace).Delete(ctx, s.name, metav1.DeleteOptions{})
	s.bmc.close()
}

// waitReached waits until the controller reached every server's BMC.
func (b *bench) waitReached(ctx context.Context, servers []*ownedServer) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, s := range servers {
			inv, err := b.env.client.MetalV1alpha1().Inventories(namespace).Get(ctx, s.name, metav1.GetOptions{})
			if err != nil || inv.Status.Status != seederv1alpha1.InventoryNodeReady {
				return false, nil
			}
		}
		return true, nil
	})
}

// ownedTally is what a set of BMCs got, by kind: the commands (a boot
// override, a power on, a power off, any other change) and the rest.
type ownedTally struct {
	bootOverride, powerOn, powerOff, otherCommand int
	// insertMedia and ejectMedia are a Redfish BMC's virtual media
	// actions (VirtualMedia.InsertMedia and EjectMedia).
	insertMedia, ejectMedia int
	logins, logouts, reads  int
	// datagrams are what IPMI clients sent the BMC, every message of a
	// session's setup and end included (Redfish has none).
	datagrams int
	// most is the most sessions one BMC had in use at once, ever.
	most int
}

func (t ownedTally) commands() int {
	return t.bootOverride + t.powerOn + t.powerOff + t.otherCommand + t.insertMedia + t.ejectMedia
}

// ownedMark is where each BMC's logs stood.
type ownedMark map[string]ownedPosition

func markOwned(servers []*ownedServer) ownedMark {
	m := ownedMark{}
	for _, s := range servers {
		m[s.name] = s.bmc.position()
	}
	return m
}

// tallySince counts what the BMCs got since the mark.
func tallySince(servers []*ownedServer, since ownedMark) ownedTally {
	var t ownedTally
	for _, s := range servers {
		s.bmc.tallyFrom(since[s.name], &t)
	}
	return t
}

// logSince writes what each BMC got since the mark, one request a line
// after its server's name, for a look at what a step sent.
func (b *bench) logSince(step string, servers []*ownedServer, since ownedMark) {
	var out strings.Builder
	for _, s := range servers {
		for _, r := range s.bmc.linesFrom(since[s.name]) {
			out.WriteString(s.name + " " + r + "\n")
		}
	}
	path := filepath.Join(b.env.workDir, "logs", "ownedpool-"+step+"-requests.log")
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		b.log.Warnf("writing %s: %v", path, err)
	}
}

// claimed counts the servers whose Inventory an Instance claims.
func (b *bench) claimed(ctx context.Context, servers []*ownedServer) (int, error) {
	n := 0
	for _, s := range servers {
		inv, err := b.env.client.MetalV1alpha1().Inventories(namespace).Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		if inv.Labels[equinixv1.LabelClaimedBy] != "" {
			n++
		}
	}
	return n, nil
}

// writeTimeline writes each server's milestones, the floor's and the
// pool's, to the benchmark folder's logs/ownedpool-<protocol>-phases.log.
func (b *bench) writeTimeline(protocol string, floor, pool *phaseClock) {
	path := filepath.Join(b.env.workDir, "logs", "ownedpool-"+protocol+"-phases.log")
	text := "# floor\n" + floor.timeline() + "# pool\n" + pool.timeline()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.log.Warnf("writing %s: %v", path, err)
	}
}
