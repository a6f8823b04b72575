package joinagent

import (
	"context"
	"fmt"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// The agent's own work per notification and per maintenance pass, at 10
// and 2,000 joined nodes: it must not grow with the fleet (go test -run
// '^$' -bench Agent ./tests/sim/joinagent). A fake clientset stands in
// for the apiserver, so the figures are the agent's cost, not the network's.
func BenchmarkAgent(b *testing.B) {
	for _, n := range []int{10, 2000} {
		ctx := context.Background()
		kube := fake.NewClientset()
		log := logrus.New()
		log.SetLevel(logrus.WarnLevel)
		a := New(nil, Options{Kube: kube, Log: log})
		net := metalsim.NetworkState{
			Type: "layer3", MACs: map[string]string{"eth0": "b4:96:91:00:00:10"},
			Ports: []metalsim.PortState{
				{Name: "bond0", Bonded: true},
				{Name: "eth0", MAC: "b4:96:91:00:00:10", Bond: "bond0", Bonded: true},
			},
			Addresses: []metalsim.Address{{Family: 4, Address: "147.75.0.1", Public: true, Management: true}},
		}
		for i := range n {
			ic := Install{Hostname: fmt.Sprintf("node-%04d", i), MACs: []string{"b4:96:91:00:00:10"},
				ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso"}
			require.NoError(b, a.register(ctx, metalsim.Notification{DeviceID: fmt.Sprintf("dev-%04d", i), Network: net}, ic))
		}
		b.Run(fmt.Sprintf("NetworkChanged/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				a.networkChanged(ctx, metalsim.Notification{DeviceID: fmt.Sprintf("dev-%04d", (i*7919)%n), Network: net})
			}
		})
		watchCtx, stop := context.WithCancel(ctx)
		m := a.watchMaintenance(watchCtx)
		b.Run(fmt.Sprintf("MaintenancePass/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.maintenancePass(ctx, m)
			}
		})
		stop()
	}
}
