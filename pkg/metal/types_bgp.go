package metal

import (
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// BGP deployment types.
const (
	BGPDeploymentLocal  = "local"
	BGPDeploymentGlobal = "global"
)

// BGPConfig is the project's BGP configuration. A project without one has an
// empty ID.
type BGPConfig struct {
	ID             string
	ASN            int64
	DeploymentType string
	// Status is requested, enabled or disabled.
	Status    string
	MaxPrefix int
	// MD5 is the project's BGP password, empty for none.
	MD5 redact.Sensitive
}

// Enabled reports whether the project has a usable BGP configuration.
func (c *BGPConfig) Enabled() bool { return c.ID != "" && c.Status != "disabled" }

// BGPSession is a device's BGP session with the Metal routers.
type BGPSession struct {
	ID       string
	DeviceID string
	// AddressFamily is ipv4 or ipv6.
	AddressFamily string
	// Status is free text: "unknown" at first, then "up" or "down".
	Status        string
	DefaultRoute  bool
	LearnedRoutes []string
	CreatedAt     time.Time
}

// BGPNeighbor is what a device needs to peer with the Metal routers.
type BGPNeighbor struct {
	AddressFamily int
	CustomerAS    int
	CustomerIP    string
	PeerAS        int
	PeerIPs       []string
	MD5Enabled    bool
	MD5Password   redact.Sensitive
	Multihop      bool
	RoutesIn      []BGPRoute
	RoutesOut     []BGPRoute
}

// BGPRoute is a prefix a neighbor accepts or announces.
type BGPRoute struct {
	Route string
	Exact bool
}

// BGPConfigRequest enables BGP on the project.
type BGPConfigRequest struct {
	ASN            int64
	DeploymentType string
	MD5            redact.Sensitive
	UseCase        string
}

// BGPSessionRequest opens a BGP session for a device. AddressFamily is ipv4
// (the default) or ipv6.
type BGPSessionRequest struct {
	AddressFamily string
	DefaultRoute  bool
}
