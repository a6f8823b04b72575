package kubevip

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

const metro = "da"

// arpNode is a Harvester node in a network namespace: mgmt-br with its
// address and default route, the apiserver forwarded in, and kube-vip
// running there with Harvester's environment.
type arpNode struct {
	name string
	ns   string
	proc *process
}

func startARPNode(t *testing.T, env *framework.Env, kv kubeVIP, h harvesterKubeVIP, home, dir, name string, n int) *arpNode {
	t.Helper()
	ns := newNetns(t)
	mgmtBridge(t, ns, fmt.Sprintf("192.0.2.%d/24", 10+n), "192.0.2.1")
	forwardIntoNetns(t, ns, apiInNetns, apiTarget(env))
	p := startInNetns(t, ns, dir, kv.bin, envList(h.env, podEnv(name, home)), "manager")
	return &arpNode{name: name, ns: ns, proc: p}
}

// The cluster VIP's Elastic IP, and a guest load balancer's from an
// ElasticIPPool, follow kube-vip itself. Two nodes run the
// real kube-vip as Harvester does (ARP, Services only, one leader on lease
// plndr-svcs-lock); the first takes the lease, binds the VIP on its mgmt-br
// and names itself in kube-vip.io/vipHost, and the addon assigns the
// Elastic IP to its device. SIGTERM to it (its pod stopping) hands the
// lease to the other, which takes the VIP and names itself; the addon moves
// the Elastic IP after it. The address is never on two devices.
func TestElasticIPsFollowKubeVIPsLeader(t *testing.T) {
	kv := requireKubeVIP(t)
	h := readHarvesterKubeVIP(t)
	env := framework.New(t, &shared, framework.Options{Configure: func(c *config.Config) {
		c.VIPElasticIP, c.ElasticIPResync = true, 5*time.Second
	}})
	env.DeleteElasticIPsAtEnd()
	env.ReserveVIP(metro)
	env.IngressExpose()
	ledger := env.WatchAddress(framework.VIP)
	names := []string{"kv-arp-0", "kv-arp-1"}
	devices := map[string]string{}
	for _, n := range names {
		devices[n] = env.FirstNode(n, metro)
	}
	// A guest cluster's load balancer: an address of an ElasticIPPool,
	// which kube-vip serves as it serves the VIP.
	pool := env.CreateElasticIPPool("kv-guests", metro, 2)
	pool = env.WaitElasticIPPoolReady(pool.Name, time.Minute)
	guest := framework.PoolAddress(pool, 1)
	guestLedger := env.WatchAddress(guest)
	env.LoadBalancerService("default", "guest-lb", guest)
	guestEIP := pool.Name + "-" + strings.ReplaceAll(guest, ".", "-")
	home := identity(t, env, h)
	dir := logDir(t)
	onDevice := func(node string) func() bool {
		return func() bool {
			for name, l := range map[string]*framework.AddressLedger{equinixv1.VIPElasticIPName: ledger, guestEIP: guestLedger} {
				eip := env.ElasticIP(name)
				if eip == nil || eip.Status.Status != equinixv1.ElasticIPPhaseAssigned || eip.Status.NodeName != node ||
					eip.Status.DeviceID != devices[node] || !slices.Equal(l.Holders(), []string{devices[node]}) {
					return false
				}
			}
			return true
		}
	}
	vipHostIs := func(node string) func(*corev1.Service) bool {
		return func(s *corev1.Service) bool { return s.Annotations[equinixv1.AnnotationVIPHost] == node }
	}

	start := time.Now()
	leader := startARPNode(t, env, kv, h, home, dir, names[0], 0)
	untilLeaseHolder(env.Ctx, t, env.Kube, leader.name)
	untilService(env.Ctx, t, env.Kube, equinixv1.VIPServiceNamespace, equinixv1.VIPServiceName, vipHostIs(leader.name))
	untilService(env.Ctx, t, env.Kube, "default", "guest-lb", vipHostIs(leader.name))
	waitUntil(t, leader.proc, 30*time.Second, "the VIP and the guest's address on the leader's mgmt-br", func() bool {
		return hasAddr(leader.ns, "mgmt-br", framework.VIP) && hasAddr(leader.ns, "mgmt-br", guest)
	})
	waitUntil(t, leader.proc, time.Minute, "the Elastic IPs on the leader's device", onDevice(leader.name))
	t.Logf("kube-vip %s started -> Elastic IPs on the leader's device: %v", kv.version, time.Since(start))

	follower := startARPNode(t, env, kv, h, home, dir, names[1], 1)
	// The follower waits on the lease: it binds nothing and names nobody.
	waitUntil(t, follower.proc, 30*time.Second, "the follower waiting on the lease", func() bool {
		return logHas(follower.proc, leaseName)
	})
	assert.False(t, hasAddr(follower.ns, "mgmt-br", framework.VIP), "the follower holds the VIP")

	start = time.Now()
	leader.proc.stop(syscall.SIGTERM)
	untilService(env.Ctx, t, env.Kube, equinixv1.VIPServiceNamespace, equinixv1.VIPServiceName, vipHostIs(follower.name))
	untilService(env.Ctx, t, env.Kube, "default", "guest-lb", vipHostIs(follower.name))
	t.Logf("SIGTERM to the leader -> vipHost names the follower: %v", time.Since(start))
	waitUntil(t, follower.proc, 30*time.Second, "the VIP and the guest's address on the follower's mgmt-br", func() bool {
		return hasAddr(follower.ns, "mgmt-br", framework.VIP) && hasAddr(follower.ns, "mgmt-br", guest)
	})
	waitUntil(t, follower.proc, time.Minute, "the Elastic IPs on the follower's device", onDevice(follower.name))
	t.Logf("SIGTERM to the leader -> Elastic IPs on the follower's device: %v", time.Since(start))
	untilLeaseHolder(env.Ctx, t, env.Kube, follower.name)
	assert.False(t, hasAddr(leader.ns, "mgmt-br", framework.VIP), "the stopped leader let the VIP go")

	assert.Empty(t, ledger.Overlaps(), "the VIP was on two devices at once")
	assert.Empty(t, guestLedger.Overlaps(), "the guest's address was on two devices at once")
	require.True(t, env.EventRecorded(equinixv1.VIPElasticIPName, equinixv1.ReasonMoved), "an Event for the move")
	require.True(t, env.EventRecorded(guestEIP, equinixv1.ReasonMoved), "an Event for the guest's move")
	env.AssertNoSecretLeaks()
}
