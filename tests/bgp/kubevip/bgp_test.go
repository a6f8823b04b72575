package kubevip

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bgpannotate"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/bgp/tor"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// bgpNode is a node in its own network namespace, linked to this one by a
// veth pair whose host end carries the top-of-rack routers' addresses and
// whose other end carries the device's private address, from which
// kube-vip peers. The routers listen on port 179, which kube-vip always
// dials. The controller runs with --bgp and has annotated the Node.
type bgpNode struct {
	env             *framework.Env
	metal           metal.Client
	tor             *tor.ToR
	name, device    string
	ns              string
	ann             map[string]string
	vip             netip.Prefix
	hostEnd, nsEnd  string
	password        string
	kubeVIP         kubeVIP
	harvesterKV     harvesterKubeVIP
	home, logFolder string
}

// newBGPNode builds the node; a password is the project's BGP password,
// set before the addon sees the node, as a person who enabled BGP with one.
func newBGPNode(t *testing.T, kv kubeVIP, password string) *bgpNode {
	t.Helper()
	env := framework.New(t, &shared, framework.Options{Configure: func(c *config.Config) {
		c.BGP, c.BGPResync = true, 2*time.Second
	}})
	b := &bgpNode{env: env, metal: env.MetalClient(framework.MetalToken, framework.ProjectID), password: password,
		kubeVIP: kv, harvesterKV: readHarvesterKubeVIP(t), logFolder: logDir(t)}
	b.ns = newNetns(t)
	forwardIntoNetns(t, b.ns, apiInNetns, apiTarget(env))
	b.hostEnd, b.nsEnd = vethToHost(t, b.ns)
	// Documentation and benchmarking ranges, one /24 each per node, apart
	// from other runs of this test on the same host.
	n := (os.Getpid()+int(nsSeq.Load()))%200 + 20
	routers := []netip.Addr{netip.MustParseAddr(fmt.Sprintf("198.18.%d.1", n)), netip.MustParseAddr(fmt.Sprintf("198.18.%d.2", n))}
	for _, r := range routers {
		ip(t, "addr", "add", r.String()+"/32", "dev", b.hostEnd)
	}
	ip(t, "-n", b.ns, "route", "add", fmt.Sprintf("198.18.%d.0/24", n), "dev", b.nsEnd)
	var err error
	b.tor, err = tor.Start(env.Ctx, env.Sim, tor.Config{RouterIPs: routers, Port: 179, PrivatePool: netip.MustParsePrefix(fmt.Sprintf("198.19.%d.0/24", n))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.tor.Close() })
	if password != "" {
		require.True(t, b.tor.MD5Available(), "the routers cannot check MD5 passwords")
		require.NoError(t, b.metal.CreateBGPConfig(env.Ctx, metal.BGPConfigRequest{ASN: 65000, DeploymentType: metal.BGPDeploymentLocal, MD5: redact.Sensitive(password)}))
	}

	b.name = fmt.Sprintf("kv-bgp-%d", n)
	b.device = env.FirstNode(b.name, metro)
	env.Eventually(func() bool {
		node, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, b.name, metav1.GetOptions{})
		if err != nil || node.Annotations[equinixv1.AnnotationBGPDevice] != b.device {
			return false
		}
		if _, err := bgpannotate.Peers(node.Annotations); err != nil {
			return false
		}
		b.ann = node.Annotations
		return true
	}, time.Minute, "the addon did not annotate node %s", b.name)
	src := b.ann[bgpannotate.PeerKey(0, "src-ip")]
	ip(t, "-n", b.ns, "addr", "add", src+"/32", "dev", b.nsEnd)
	ip(t, "route", "add", src+"/32", "dev", b.hostEnd)

	b.vip = netip.MustParsePrefix(fmt.Sprintf("203.0.113.%d/32", n))
	_, err = env.Sim.AddIPReservation(framework.ProjectID, metalsim.IPReservationSpec{CIDR: b.vip.String(), Metro: metro, Tags: []string{"guest-lb"}})
	require.NoError(t, err)
	b.home = identity(t, env, b.harvesterKV)
	return b
}

// bgpEnv is Harvester's kube-vip turned to BGP for Services, as seed 002
// runs it on Equinix Metal: no ARP, the addresses on lo.
func (b *bgpNode) bgpEnv(extra map[string]string) []string {
	bgp := map[string]string{"vip_arp": "false", "bgp_enable": "true", "vip_interface": "lo"}
	return envList(b.harvesterKV.env, bgp, podEnv(b.name, b.home), extra)
}

// annotationMode is kube-vip --annotations metal.equinix.com (its variable
// is "annotation"). kube-vip v1.0.0 builds its BGP server before it reads
// the annotations and wants a peer by then: a placeholder, which the
// annotations replace. From v1.0.1 to v1.1.x the annotations never reach
// the server at all (kube-vip/kube-vip#1488, fixed in v1.2.0).
func (b *bgpNode) annotationMode(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{"annotation": bgpannotate.Prefix}
	switch v := b.kubeVIP.version; {
	case v == "v1.0.0":
		env["bgp_peers"] = "192.0.2.254:65530::false"
	case strings.HasPrefix(v, "v1.0.") || strings.HasPrefix(v, "v1.1."):
		t.Fatalf("kube-vip %s never uses the peers it reads from node annotations (kube-vip/kube-vip#1488); annotation mode needs v1.0.0 or v1.2.0 and later", v)
	}
	return env
}

// staticPeers is kube-vip given its peers in its own configuration, as a
// project with a BGP password needs: what the annotations say, with the
// password, which a Secret gives it through envFrom.
func (b *bgpNode) staticPeers() map[string]string {
	peers, _ := bgpannotate.Peers(b.ann)
	var list []string
	for _, p := range peers {
		list = append(list, fmt.Sprintf("%s:%d:%s:false", p.Address, p.AS, b.password))
	}
	src := peers[0].SourceIP.String()
	return map[string]string{"bgp_as": fmt.Sprint(peers[0].LocalAS), "bgp_routerid": src, "bgp_sourceip": src, "bgp_peers": strings.Join(list, ",")}
}

// guestService is a LoadBalancer Service with its Elastic IP, and an
// endpoint: kube-vip announces a Service in BGP mode only while it has one.
func (b *bgpNode) guestService(t *testing.T) string {
	t.Helper()
	env, name := b.env, "web-"+b.name
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{"kube-vip.io/loadbalancerIPs": b.vip.Addr().String()}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}
	_, err := env.Kube.CoreV1().Services("default").Create(env.Ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Services("default").Delete(env.Ctx, name, metav1.DeleteOptions{}) })
	ready, port := true, int32(8080)
	_, err = env.Kube.DiscoveryV1().EndpointSlices("default").Create(env.Ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.52.0.7"}, NodeName: &b.name,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{{Port: &port}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.DiscoveryV1().EndpointSlices("default").Delete(env.Ctx, name+"-1", metav1.DeleteOptions{})
	})
	return name
}

// sessionUp: the API says the device's session is up, which the routers
// report once kube-vip is established with one of them.
func (b *bgpNode) sessionUp() bool {
	s, err := b.metal.ListBGPSessions(b.env.Ctx, b.device)
	return err == nil && len(s) == 1 && s[0].Status == "up"
}

// metadataNeighbor is bgp_neighbors[0] of the device's metadata, which
// seed 002's recipe reads for kube-vip's flags.
func (b *bgpNode) metadataNeighbor(t *testing.T) metadataNeighbor {
	t.Helper()
	req, err := http.NewRequestWithContext(b.env.Ctx, http.MethodGet, strings.TrimSuffix(b.env.SimURL, "/metal/v1")+"/metadata", nil)
	require.NoError(t, err)
	req.Header.Set(metalsim.DeviceIDHeader, b.device)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var md struct {
		BGPNeighbors []metadataNeighbor `json:"bgp_neighbors"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&md))
	require.Len(t, md.BGPNeighbors, 1, "one IPv4 session")
	return md.BGPNeighbors[0]
}

type metadataNeighbor struct {
	CustomerAS  int64    `json:"customer_as"`
	CustomerIP  string   `json:"customer_ip"`
	PeerAS      int64    `json:"peer_as"`
	PeerIPs     []string `json:"peer_ips"`
	MD5Enabled  bool     `json:"md5_enabled"`
	MD5Password string   `json:"md5_password"`
}

// agreesWithMetadata checks the annotations the addon wrote say what the
// device's metadata says, but its password.
func (b *bgpNode) agreesWithMetadata(t *testing.T) {
	t.Helper()
	md := b.metadataNeighbor(t)
	peers, err := bgpannotate.Peers(b.ann)
	require.NoError(t, err)
	var peerIPs []string
	for _, p := range peers {
		assert.Equal(t, md.CustomerAS, int64(p.LocalAS), "node-asn is customer_as")
		assert.Equal(t, md.PeerAS, int64(p.AS), "peer-asn is peer_as")
		assert.Equal(t, md.CustomerIP, p.SourceIP.String(), "src-ip is customer_ip")
		assert.Empty(t, p.Password, "no bgp-pass")
		peerIPs = append(peerIPs, p.Address.String())
	}
	want := append([]string(nil), md.PeerIPs...)
	sort.Strings(want)
	assert.Equal(t, want, peerIPs, "a peer-ip for each of peer_ips")
	assert.Equal(t, b.password != "", md.MD5Enabled)
	assert.Equal(t, b.password, md.MD5Password, "the metadata has the password; the annotations do not")
	t.Logf("metadata bgp_neighbors[0]: customer_as %d customer_ip %s peer_as %d peer_ips %v md5_enabled %v",
		md.CustomerAS, md.CustomerIP, md.PeerAS, md.PeerIPs, md.MD5Enabled)
}

// routed waits until the routers route the Service's address to the
// node's device, and checks it ends when the Service goes.
func (b *bgpNode) routed(t *testing.T, p *process, svc string, start time.Time) {
	t.Helper()
	waitUntil(t, p, time.Minute, "the session up", b.sessionUp)
	t.Logf("kube-vip started -> session up: %v", time.Since(start))
	waitUntil(t, p, time.Minute, b.vip.String()+" routed to the device", func() bool {
		dev, ok := b.env.Sim.RouteOf(b.vip)
		return ok && dev == b.device
	})
	t.Logf("kube-vip started -> %s routed to the node's device: %v", b.vip, time.Since(start))
	assert.True(t, hasAddr(b.ns, "lo", b.vip.Addr().String()), "kube-vip put the address on lo")
	s, err := b.metal.ListBGPSessions(b.env.Ctx, b.device)
	require.NoError(t, err)
	assert.Equal(t, []string{b.vip.String()}, s[0].LearnedRoutes)

	require.NoError(t, b.env.Kube.CoreV1().Services("default").Delete(b.env.Ctx, svc, metav1.DeleteOptions{}))
	waitUntil(t, p, 30*time.Second, "the route withdrawn", func() bool { _, ok := b.env.Sim.RouteOf(b.vip); return !ok })
}

// kube-vip in BGP mode for Services, reading the peering annotations the
// addon writes (--annotations metal.equinix.com): it peers with both
// top-of-rack routers from the device's private address and draws a
// Service's Elastic IP to the node's device. The annotations agree with the
// device's metadata. A project BGP password is never in them, so kube-vip
// in annotation mode gets no session with such a project; given its peers
// in its own configuration it does.
func TestKubeVIPPeersAsTheAddonsAnnotationsSay(t *testing.T) {
	kv := requireKubeVIP(t)

	t.Run("without a project password the annotations are all kube-vip needs", func(t *testing.T) {
		b := newBGPNode(t, kv, "")
		b.agreesWithMetadata(t)
		svc := b.guestService(t)
		start := time.Now()
		p := startInNetns(t, b.ns, b.logFolder, kv.bin, b.bgpEnv(b.annotationMode(t)), "manager")
		b.routed(t, p, svc, start)
		b.env.AssertNoSecretLeaks()
	})

	const password = "Md5sEcret8844"
	t.Run("with a project password annotation mode gets no session", func(t *testing.T) {
		b := newBGPNode(t, kv, password)
		b.agreesWithMetadata(t)
		b.env.AssertAbsent(password, base64.StdEncoding.EncodeToString([]byte(password)))
		b.guestService(t)
		before := md5Counter(t, "TCPMD5NotFound")
		p := startInNetns(t, b.ns, b.logFolder, kv.bin, b.bgpEnv(b.annotationMode(t)), "manager")
		waitUntil(t, p, time.Minute, "the routers dropping kube-vip's unsigned connections", func() bool {
			return md5Counter(t, "TCPMD5NotFound") > before
		})
		assert.False(t, b.sessionUp(), "a session without the password")
	})

	t.Run("with a project password kube-vip given its peers by its own configuration peers", func(t *testing.T) {
		b := newBGPNode(t, kv, password)
		svc := b.guestService(t)
		start := time.Now()
		p := startInNetns(t, b.ns, b.logFolder, kv.bin, b.bgpEnv(b.staticPeers()), "manager")
		b.routed(t, p, svc, start)
		b.env.AssertAbsent(password, base64.StdEncoding.EncodeToString([]byte(password)))
	})
}

// md5Counter reads a TcpExt counter of this network namespace, where the
// routers listen: TCPMD5NotFound counts segments that came without the
// signature a socket expects, which the kernel dropped.
func md5Counter(t *testing.T, name string) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/net/netstat")
	require.NoError(t, err)
	lines := strings.Split(string(raw), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		if !strings.HasPrefix(lines[i], "TcpExt:") {
			continue
		}
		keys, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j := range keys {
			if keys[j] == name && j < len(vals) {
				var v int64
				_, err := fmt.Sscan(vals[j], &v)
				require.NoError(t, err)
				return v
			}
		}
	}
	t.Fatalf("no TcpExt counter %s", name)
	return 0
}
