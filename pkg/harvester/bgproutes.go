package harvester

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// BGPPeerIPs are Equinix Metal's BGP routers: they answer at the same two addresses in every
// metro, and only to packets from the device's private address: they are
// reached through the private gateway, which the default route (public)
// does not go to.
var BGPPeerIPs = []string{"169.254.255.1", "169.254.255.2"}

const (
	// MetadataURL is where a device reads its own metadata (addresses,
	// gateways, BGP neighbors).
	MetadataURL = "https://metadata.platformequinix.com/metadata"
	// BGPPeerRoutesFile is the cloud-config the install configuration
	// leaves in /oem, which Harvester's OS runs at every boot: at its
	// network stage it routes the BGP peers through the private gateway.
	BGPPeerRoutesFile = "/oem/95_equinix_bgp_peers.yaml"
)

// bgpPeerRoutesScript reads the device's private IPv4 address and gateway
// from the metadata service (the device is known there, whatever its
// boot mode), puts the address on the interface of the default route
// (mgmt-br) if it is not there yet, since the routers and a speaker's
// source address need it, and routes each peer through the gateway.
// Replacing is idempotent, so every boot runs it again. The metadata
// service may not answer the first seconds after the network comes up.
func bgpPeerRoutesScript() string {
	peers := ""
	for _, p := range BGPPeerIPs {
		peers += " " + p
	}
	return fmt.Sprintf(`set -eu
md=$(curl -fsS --retry 30 --retry-delay 2 --retry-all-errors %s)
private='[.network.addresses[] | select(.public == false and .address_family == 4)][0]'
addr=$(printf '%%s' "$md" | jq -er "$private"' | "\(.address)/\(.cidr)"')
gw=$(printf '%%s' "$md" | jq -er "$private"'.gateway')
dev=$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
[ -n "$dev" ]
ip address replace "$addr" dev "$dev"
for peer in%s; do
  ip route replace "$peer/32" via "$gw" dev "$dev"
done
`, MetadataURL, peers)
}

// writeFile is an entry of os.write_files, written by Harvester's OS at
// every boot.
type writeFile struct {
	Path        string `yaml:"path"`
	Content     string `yaml:"content"`
	Owner       string `yaml:"owner"`
	Permissions quoted `yaml:"permissions"`
}

// cloudConfig is the part of a Harvester OS cloud-config (yip) the routes
// need: one step, at the network stage, that runs commands.
type cloudConfig struct {
	Name   string                `yaml:"name"`
	Stages map[string][]bootStep `yaml:"stages"`
}

type bootStep struct {
	Name     string   `yaml:"name"`
	Commands []string `yaml:"commands"`
}

// bgpPeerRoutes is the os.write_files entry of BGPPeerRoutesFile.
func bgpPeerRoutes() (writeFile, error) {
	doc := cloudConfig{Name: "Equinix Metal BGP peers (harvester-equinix-addon)", Stages: map[string][]bootStep{
		"network": {{Name: "Route the BGP peers through the private gateway", Commands: []string{bgpPeerRoutesScript()}}},
	}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return writeFile{}, fmt.Errorf("encoding the BGP peer routes: %w", err)
	}
	if err := enc.Close(); err != nil {
		return writeFile{}, fmt.Errorf("encoding the BGP peer routes: %w", err)
	}
	return writeFile{Path: BGPPeerRoutesFile, Content: buf.String(), Owner: "root", Permissions: "0600"}, nil
}
