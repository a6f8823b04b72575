package metalsim

import (
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// Event types the simulator records. The API's types were free strings.
// Those of the provisioning steps are the codes its provisioning system
// posted (provisioning.104.01 "Device connected to DHCP system" on every
// PXE boot, provisioning.106 once the OS packages are installed,
// provisioning.109 at the installer's end); the others follow its
// "<object>.<verb>" style and are inferred.
const (
	EventCreated           = "instance.created"
	EventProvisioning      = "provisioning.started"
	EventDHCP              = "provisioning.104.01"
	EventOSInstalled       = "provisioning.106"
	EventProvisioned       = "provisioning.109"
	EventActive            = "instance.active"
	EventFailed            = "provisioning.failed"
	EventUpdated           = "instance.updated"
	EventReinstall         = "instance.reinstall"
	EventReinstalled       = "instance.reinstalled"
	EventPowerOff          = "instance.power_off"
	EventPoweredOff        = "instance.powered_off"
	EventPowerOn           = "instance.power_on"
	EventPoweredOn         = "instance.powered_on"
	EventReboot            = "instance.reboot"
	EventRescue            = "instance.rescue"
	EventDeprovisioning    = "instance.deprovisioning"
	EventDeleted           = "instance.deleted"
	EventPortBonded        = "port.bonded"
	EventPortDisbonded     = "port.disbonded"
	EventPortLayer2        = "port.converted_to_layer2"
	EventPortLayer3        = "port.converted_to_layer3"
	EventVLANAssigned      = "port.vlan_assigned"
	EventVLANUnassigned    = "port.vlan_unassigned"
	EventNativeVLAN        = "port.native_vlan_assigned"
	EventNativeVLANGone    = "port.native_vlan_removed"
	EventIPAssigned        = "ip.assigned"
	EventIPUnassigned      = "ip.unassigned"
	EventBGPSession        = "bgp.session_created"
	EventUserState         = "user.state"
	EventPhoneHome         = "instance.phone_home"
	EventMaintenance       = "maintenance.scheduled"
	EventTerminationNotice = "instance.termination_scheduled"
	EventReclaimed         = "instance.reclaimed"

	// EventIPXEHandedOut is the event of a custom_ipxe device's script
	// being served: the DHCP/PXE step of the API's provisioning.
	EventIPXEHandedOut = EventDHCP
)

// eventRec is one recorded event. The device keeps its own, the project
// every event of its devices (they outlive the device, as the API's
// project events did).
type eventRec struct {
	ev metalv1.Event
}

// recordEventLocked records an event about d. body may say "{{ device }}";
// the interpolated text names the hostname, as the API's events did.
func (s *Simulator) recordEventLocked(d *device, at time.Time, typ, state, body string) {
	id := s.ids.uuid()
	rec := &eventRec{ev: metalv1.Event{
		Id:            ptr(id),
		Href:          ptr(apiPrefix + "/events/" + id),
		Type:          ptr(typ),
		State:         ptr(state),
		Body:          ptr(body),
		Interpolated:  ptr(strings.ReplaceAll(body, "{{ device }}", d.hostname())),
		CreatedAt:     ptr(at),
		Relationships: []metalv1.Href{{Href: deviceHref(d.id())}},
	}}
	d.events = append(d.events, rec)
	d.project.events = append(d.project.events, rec)
}

// eventPage answers one page of events stored oldest first, newest first
// as the API listed them.
func (c *call) eventPage(events []*eventRec) (reply, error) {
	pr := c.pagination()
	lo, hi := pr.bounds(len(events))
	list := metalv1.EventList{Events: make([]metalv1.Event, 0, hi-lo), Meta: c.meta(len(events), pr)}
	for i := lo; i < hi; i++ {
		list.Events = append(list.Events, events[len(events)-1-i].ev)
	}
	return jsonReply(200, list)
}

func (s *Simulator) findDeviceEvents(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return c.eventPage(d.events)
}

func (s *Simulator) findProjectEvents(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return c.eventPage(p.events)
}

func copyEvent(e metalv1.Event) metalv1.Event {
	out := e
	out.Relationships = append([]metalv1.Href(nil), e.Relationships...)
	return out
}
