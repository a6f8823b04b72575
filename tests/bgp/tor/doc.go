// Package tor runs a real BGP top-of-rack for the Metal simulator: one
// GoBGP server (github.com/osrg/gobgp/v3, in process, through its Go API)
// per Equinix router, in AS 65530, on loopback addresses. Devices' BGP
// speakers peer with it exactly as they would with 169.254.255.1 and .2,
// and it routes each Elastic IP to the device whose speaker announces it.
//
// # Wiring
//
//	sim := metalsim.New(...)
//	t, err := tor.Start(ctx, sim, tor.Config{}) // before any device exists
//	defer t.Close()
//	...
//	deviceID, ok := t.RouteOf(netip.MustParsePrefix("10.0.0.10/32"))
//
// Start calls metalsim's AttachRouters, which changes what the API says:
//
//   - every IPv4 neighbor's peer_ips are the routers' addresses
//     (DefaultRouterIPs: 127.254.255.1 and 127.254.255.2);
//   - devices' private IPv4 addresses, and so their customer_ip, come from
//     Config.PrivatePool (DefaultPrivatePool, 127.64.0.0/10), addresses a
//     test speaker can bind on loopback without privileges; the /25 parent
//     block (the CCM's network-4-private) is carved from it too;
//   - a session's status is "unknown" until the routers know it, then "up"
//     while the device's speaker is established with at least one router and
//     "down" otherwise; learned_routes lists the prefixes accepted from it.
//
// # Port
//
// Binding 179 needs root, so the routers listen on Config.Port, by default
// a free port picked at start; Port() returns it. The API has no field for
// a BGP port, so it is conveyed out of band: a test passes it to its
// speaker (SpeakerPeer.Port). Real kube-vip always dials 179 (it parses a
// port in its bgp_peers form but does not use it), so pointing a real
// kube-vip at these routers takes Config.Port 179 as root, or a
// redirection of 179 to Port (an iptables DNAT, also root).
//
// # What the routers check
//
// A router accepts a connection only from the customer_ip of a device with
// an IPv4 session in a project whose BGP config is enabled, with the
// project's ASN as the peer AS and its MD5 password, if it has one. It
// accepts only prefixes inside the device's routes_in (the project's
// created Elastic IPs in the device's metro and its global IPs; /32s
// exactly, larger blocks down to /32) and rejects everything else, as
// Metal's routers filtered customer announcements; more than max_prefix
// (10) prefixes tears the session down. Changes in the simulator (sessions,
// configs, reservations, devices) reach the routers at once and routes
// already received are filtered again.
//
// MD5 is the kernel's TCP_MD5SIG. Since Go 1.24 listeners are MPTCP
// sockets, which refuse it: a binary embedding the routers needs
// GODEBUG=multipathtcp=0 (the package's tests set it with a //go:debug
// line). Without it MD5Available is false and sessions of projects with a
// password stay administratively down instead of being accepted unchecked.
//
// # Routing table
//
// RouteOf names the source of the best path of the first router that has
// one. After every change the routers' sessions and tables are reported to
// the simulator (ReportRouters), so metalsim's RouteOf, session status and
// learned_routes agree with the routers without any API request.
//
// # Speaker
//
// StartSpeaker runs a second GoBGP instance configured like kube-vip in BGP
// mode: one local AS, one source address (also the router ID), one peer per
// router. Tests build it from the node annotations the addon writes and
// announce or withdraw the VIP with it.
package tor
