package metalsim

import (
	"encoding/json"
	"fmt"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// Metadata is the document GET /metadata returns to a device, shaped like
// the real metadata service's (packngo metadata/testdata/device.json).
type Metadata struct {
	ID              string                    `json:"id"`
	Hostname        string                    `json:"hostname"`
	IQN             string                    `json:"iqn"`
	Plan            string                    `json:"plan"`
	Class           string                    `json:"class"`
	Facility        string                    `json:"facility"`
	Metro           string                    `json:"metro"`
	Tags            []string                  `json:"tags"`
	SSHKeys         []string                  `json:"ssh_keys"`
	Customdata      map[string]interface{}    `json:"customdata"`
	OperatingSystem MetadataOS                `json:"operating_system"`
	Network         MetadataNetwork           `json:"network"`
	PrivateSubnets  []string                  `json:"private_subnets"`
	SwitchShortID   string                    `json:"switch_short_id"`
	BGPNeighbors    []metalv1.BgpNeighborData `json:"bgp_neighbors"`
	Volumes         []string                  `json:"volumes"`
	APIURL          string                    `json:"api_url"`
	PhoneHomeURL    string                    `json:"phone_home_url"`
	UserStateURL    string                    `json:"user_state_url"`
}

// MetadataOS is the operating_system of Metadata.
type MetadataOS struct {
	Slug    string `json:"slug"`
	Distro  string `json:"distro"`
	Version string `json:"version"`
}

// MetadataNetwork is the network of Metadata; addresses are the device's
// ip_addresses (the spec's typing of this field is wrong).
type MetadataNetwork struct {
	Bonding    MetadataBonding        `json:"bonding"`
	Interfaces []MetadataInterface    `json:"interfaces"`
	Addresses  []metalv1.IPAssignment `json:"addresses"`
}

// MetadataBonding describes the bond; mode 4 is 802.3ad (LACP).
type MetadataBonding struct {
	Mode            int    `json:"mode"`
	LinkAggregation string `json:"link_aggregation"`
	MAC             string `json:"mac"`
}

// MetadataInterface is one physical port.
type MetadataInterface struct {
	Name string `json:"name"`
	MAC  string `json:"mac"`
	Bond string `json:"bond"`
}

// UserState is what a device POSTs to user_state_url to report progress;
// it becomes a device event of type EventUserState.
type UserState struct {
	State   string `json:"state"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// metadataDeviceLocked finds the calling device: the metadata service only
// answers an active device that still has a layer-3 path.
func (c *call) metadataDeviceLocked() (*device, error) {
	d, ok := c.s.devices[c.r.Header.Get(DeviceIDHeader)]
	if !ok || d.state != metalv1.DEVICESTATE_ACTIVE {
		return nil, errNotFound()
	}
	if isPureLayer2(d) {
		return nil, errStatus(503, "The metadata service is not reachable from a device in %s mode", deviceNetworkType(d))
	}
	return d, nil
}

func (s *Simulator) serveMetadata(c *call) (reply, error) {
	d, err := c.metadataDeviceLocked()
	if err != nil {
		return reply{}, err
	}
	base := "http://" + c.r.Host
	md := Metadata{
		ID:              d.id(),
		Hostname:        d.hostname(),
		IQN:             d.obj.GetIqn(),
		Plan:            d.plan.slug,
		Class:           d.plan.slug,
		Facility:        d.facility.code,
		Metro:           d.metro.code,
		Tags:            append([]string{}, d.obj.Tags...),
		SSHKeys:         []string{},
		Customdata:      copyMap(d.obj.Customdata),
		OperatingSystem: MetadataOS{Slug: d.os.slug, Distro: d.os.distro, Version: d.os.version},
		PrivateSubnets:  []string{"10.0.0.0/8"},
		SwitchShortID:   d.obj.GetSwitchUuid(),
		BGPNeighbors:    []metalv1.BgpNeighborData{},
		Volumes:         []string{},
		APIURL:          base + apiPrefix,
		PhoneHomeURL:    base + "/phone-home",
		UserStateURL:    base + "/events",
		Network: MetadataNetwork{
			Bonding:    MetadataBonding{Mode: 4, LinkAggregation: "bonded"},
			Interfaces: []MetadataInterface{},
			Addresses:  []metalv1.IPAssignment{},
		},
	}
	for _, p := range d.ports {
		if p.isBond() {
			continue
		}
		if md.Network.Bonding.MAC == "" {
			md.Network.Bonding.MAC = p.mac
		}
		md.Network.Interfaces = append(md.Network.Interfaces, MetadataInterface{Name: p.name, MAC: p.mac, Bond: p.bond.name})
	}
	for _, a := range d.ips {
		md.Network.Addresses = append(md.Network.Addresses, s.renderAssignment(a))
	}
	for _, bs := range d.sessions {
		md.BGPNeighbors = append(md.BGPNeighbors, s.neighborData(d, bs))
	}
	return jsonReply(200, md)
}

func (s *Simulator) serveUserdata(c *call) (reply, error) {
	d, err := c.metadataDeviceLocked()
	if err != nil {
		return reply{}, err
	}
	return reply{status: 200, body: []byte(d.obj.GetUserdata()), contentType: "text/plain; charset=utf-8"}, nil
}

func (s *Simulator) postUserState(c *call) (reply, error) {
	d, err := c.metadataDeviceLocked()
	if err != nil {
		return reply{}, err
	}
	var st UserState
	if err := json.Unmarshal(c.body, &st); err != nil || st.State == "" {
		return reply{}, errInvalid("state is required")
	}
	body := st.Message
	if body == "" {
		body = fmt.Sprintf("{{ device }} reported %s", st.State)
	}
	s.recordEventLocked(d, c.now, EventUserState, st.State, body)
	return emptyReply(204)
}

func (s *Simulator) phoneHome(c *call) (reply, error) {
	d, err := c.metadataDeviceLocked()
	if err != nil {
		return reply{}, err
	}
	s.recordEventLocked(d, c.now, EventPhoneHome, "success", "{{ device }} phoned home")
	return emptyReply(204)
}
