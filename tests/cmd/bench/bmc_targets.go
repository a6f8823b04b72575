package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

func createBMCNode(ctx context.Context, b *bench, bb *bmcBench) error {
	kube := b.env.kube
	if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: bb.node}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := nodeReady(ctx, b, bb.node); err != nil {
		return err
	}
	// As the UI's Add Secret makes it: no label.
	_, err := kube.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bb.node},
		Data:       map[string][]byte{"username": []byte(bmcBenchUser), "password": []byte(bmcBenchPassword)},
	}, metav1.CreateOptions{})
	return err
}

// nodeReady makes the node Ready with a new transition time, as a kubelet
// whose server came back does.
func nodeReady(ctx context.Context, b *bench, name string) error {
	n, err := b.env.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	_, err = b.env.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func redfishBench() (*bmcBench, error) {
	sim := bmcsim.New(bmcsim.Options{Username: bmcBenchUser, Password: bmcBenchPassword, PowerTransition: bmcBenchSettle})
	sim.AddLogEntry("OK", "System boot completed")
	srv, err := bmcsim.NewServer(sim, "")
	if err != nil {
		return nil, err
	}
	return &bmcBench{
		protocol: "redfish", node: "bench-bmc-redfish",
		connection: seederv1alpha1.Connection{Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM)},
		counts: func() bmcCounts {
			log := sim.RequestLog()
			c := bmcCounts{sessions: sim.Logins().Accepted, most: sim.Logins().MostSessions, requests: len(log)}
			for i, r := range log {
				if !strings.HasPrefix(r, "GET ") {
					r = fmt.Sprintf("%s #%d", r, i)
				}
				c.keys = append(c.keys, r)
			}
			return c
		},
		commands: func() int { return len(sim.Resets()) },
		stop:     func() { _ = srv.Close() },
	}, nil
}

func ipmiBench() (*bmcBench, error) {
	b, err := ownedfleet.StartIPMI(ipmisim.Options{Username: bmcBenchUser, Password: bmcBenchPassword})
	if err != nil {
		return nil, err
	}
	sim, relay := b.Sim, b.Relay
	return &bmcBench{
		protocol: "ipmi", node: "bench-bmc-ipmi",
		connection: relayedIPMIConnection(relay),
		counts: func() bmcCounts {
			c := bmcCounts{sessions: len(relay.Sessions()), most: relay.MostSessions(), requests: relay.Sent()}
			for _, m := range sim.Messages() {
				key := fmt.Sprintf("%02x/%02x %s", m.NetFn, m.Cmd, m.Data)
				if m.NetFn == 0x06 && (m.Cmd == 0x3c || m.Cmd == 0x3d) {
					// Close Session is in the minimum's session end, and a
					// keep-alive is not needed by a session that is busy.
					key = "session"
				}
				c.keys = append(c.keys, key)
			}
			return c
		},
		commands: func() int { return len(sim.ChassisControls()) },
		stop:     func() { _ = b.Close() },
	}, nil
}

// relayedIPMIConnection is the Inventory connection that reaches an
// ipmi_sim through its relay.
func relayedIPMIConnection(relay *ipmisim.Relay) seederv1alpha1.Connection {
	return seederv1alpha1.Connection{Host: "127.0.0.1", Port: seederv1alpha1.IPMIPort,
		ProviderOptions: &seederv1alpha1.ProviderOptions{IPMITOOL: &seederv1alpha1.IPMITOOLOptions{Port: relay.Port()}}}
}
