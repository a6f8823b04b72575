// Package bgpannotate writes and reads the node annotations through which
// the Equinix Metal CCM (v3.3 and later) hands a device's BGP peering to
// kube-vip running with --annotations metal.equinix.com. It is pure logic
// on pkg/metal types; the controller fetches the neighbors and patches the
// Node.
//
// Annotations builds the CCM's keys from a device's BGP neighbors and its
// private network (PrivateNetwork); Peers reads them back exactly as
// kube-vip does; Remove and Stale drop them when a session goes.
//
// # What kube-vip needs besides the annotations
//
// The password. The CCM puts the base64 of the project's MD5 password in
// bgp-peers-{n}-bgp-pass; these annotations never carry it. In annotation
// mode kube-vip takes the password only from that annotation: it rebuilds
// its peers from the annotations, so its own --peerPass flag and
// bgp_peerpass variable are not used there. Hence:
//
//   - without a project password (the CCM's default, METAL_BGP_PASS="")
//     the annotations are all kube-vip needs;
//   - with one, kube-vip cannot use annotation mode: run it without
//     --annotations and give it the peers from its own Secret through the
//     bgp_peers variable (env valueFrom secretKeyRef), one entry per router,
//     <address>:<AS>:<password>:<multihop>, e.g.
//     169.254.255.1:65530:<password>:true,169.254.255.2:65530:<password>:true,
//     with bgp_as 65000 and bgp_sourceip and bgp_routerid set to the node's
//     private address (what src-ip would say), per node, e.g. from the
//     downward API's status.hostIP when the node's InternalIP is that
//     address. The project's password is what GetBGPConfig returns (MD5).
//
// Routes to the peers. 169.254.255.1 and .2 are reached through the
// private gateway: every node needs
//
//	ip route add 169.254.255.1 via <private gateway>
//	ip route add 169.254.255.2 via <private gateway>
//
// where the gateway is the metadata's private IPv4 address's gateway
// (network.addresses[] with public false and address_family 4), or
// kube-vip's logs show errors about 169.254.255.1/.2. kube-vip peers from
// src-ip, the node's private address, which is what the routers require.
//
// The node. kube-vip finds its Node by the label kubernetes.io/hostname
// equal to its node name and waits until node-asn, src-ip, peer-asn and at
// least one peer-ip are present. It reads node-asn, src-ip and peer-asn of
// peer 0 only and peers with every peer-ip on port 179.
package bgpannotate
