package metalsim

import (
	"net/netip"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// The internal model. API-shaped data lives in metalv1 structs (device.obj,
// vlan.obj, events, sessions) so responses are always produced by
// the SDK's own MarshalJSON; the rest is the simulation state that computed
// fields (state, ports, addresses, network types) are derived from.

type project struct {
	id        string
	name      string
	createdAt time.Time
	userID    string
	bgp       *bgpConfig
	// devices in creation order, the order of the project's device list,
	// and the same per tag, for the tag filter adoption lists by.
	devices seqList[*device]
	byTag   map[string]*seqList[*device]
	// blocks are the project's IP reservations in creation order, elastic
	// the ones that are not a device's management block.
	blocks  seqList[*ipBlock]
	elastic seqList[*ipBlock]
	// private are the project's private /25 management blocks, few.
	private []*ipBlock
	// events of every device of the project, oldest first.
	events []*eventRec
	// reservations are the project's hardware reservations in creation order.
	reservations seqList[*hwReservation]
}

func projectHref(id string) string { return apiPrefix + "/projects/" + id }

type device struct {
	// obj holds the stored API fields; renderDevice adds the computed ones.
	obj      metalv1.Device
	project  *project
	plan     planInfo
	metro    metroInfo
	facility facilityInfo
	os       osInfo

	state metalv1.DeviceState
	// stateAt is when the current state was entered and stateDone when a
	// transitional state is scheduled to end (for provisioning_percentage).
	stateAt, stateDone time.Time
	// gen is bumped whenever a new operation is scheduled, so a timer set up
	// by an older operation recognises that it is stale.
	gen           uint64
	seq           uint64 // creation order, the order of project lists
	failProvision bool
	gone          bool
	// termGen is bumped whenever the termination time changes, so the
	// reclaim scheduled for an older one does nothing.
	termGen uint64
	// reclaimLead, set by FaultSpotReclaim, gives the device a termination
	// notice this long before its reclaim once it turns active.
	reclaimLead *time.Duration
	// reclaimed marks a device taken back at its termination time.
	reclaimed bool

	ports       []*port
	ips         []*ipAssignment
	events      []*eventRec
	reservation *hwReservation
	sessions    []*bgpSession
}

func (d *device) id() string       { return d.obj.GetId() }
func (d *device) hostname() string { return d.obj.GetHostname() }

func deviceHref(id string) string { return apiPrefix + "/devices/" + id }

type port struct {
	id, name string
	dev      *device
	mac      string  // physical ports only
	bond     *port   // physical ports: the bond they belong to
	members  []*port // bond ports: their physical ports
	bonded   bool    // physical ports only
	layer2   bool    // bond ports only
	vlans    []*vlan // in assignment order
	native   *vlan
	// converting marks a bond with a delayed layer conversion in flight.
	converting bool
}

func (p *port) isBond() bool { return p.members != nil }

func portHref(id string) string { return apiPrefix + "/ports/" + id }

type vlan struct {
	obj     metalv1.VirtualNetwork
	project *project
	metro   metroInfo
	// ports carrying the VLAN (native or not), and the devices they belong
	// to in creation order: the VLAN's instances.
	ports   map[*port]bool
	devices refList[*device]
}

func (v *vlan) id() string   { return v.obj.GetId() }
func (v *vlan) vxlan() int32 { return v.obj.GetVxlan() }

func vlanHref(id string) string { return apiPrefix + "/virtual-networks/" + id }

type ipBlock struct {
	id         string
	project    *project
	metro      metroInfo // zero for global_ipv4
	kind       metalv1.IPReservationType
	prefix     netip.Prefix
	management bool
	// device owns a device-level management block (public IPv4 and IPv6);
	// a project's private IPv4 block has none.
	device     *device
	tags       []string
	details    string
	customdata map[string]interface{}
	state      string
	createdAt  time.Time
	seq        uint64
	assigned   []*ipAssignment
	// next is the offset of the next /31 a private project block hands
	// out; it only grows, so no address is handed out twice.
	next uint32
}

type ipAssignment struct {
	id         string
	block      *ipBlock
	device     *device
	prefix     netip.Prefix // the assigned address with its own prefix length
	management bool
	createdAt  time.Time
}

func ipHref(id string) string { return apiPrefix + "/ips/" + id }

type bgpConfig struct {
	obj metalv1.BgpConfig
	md5 string
}

type bgpSession struct {
	obj    metalv1.BgpSession
	device *device
}

type hwReservation struct {
	id, shortID     string
	project         *project
	plan            planInfo
	metro           metroInfo
	facility        facilityInfo
	device          *device
	spare           bool
	switchUUID      string
	provisionableAt time.Time
	createdAt       time.Time
	seq             uint64
}

func hwReservationHref(id string) string { return apiPrefix + "/hardware-reservations/" + id }
