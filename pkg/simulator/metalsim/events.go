package metalsim

import (
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// Event types the simulator records. The real API's types were free
// strings; these follow its "<object>.<verb>" style.
const (
	EventCreated        = "instance.created"
	EventProvisioning   = "provisioning.started"
	EventIPXEHandedOut  = "provisioning.ipxe_script_served"
	EventActive         = "instance.active"
	EventFailed         = "provisioning.failed"
	EventUpdated        = "instance.updated"
	EventReinstall      = "instance.reinstall"
	EventReinstalled    = "instance.reinstalled"
	EventPowerOff       = "instance.power_off"
	EventPoweredOff     = "instance.powered_off"
	EventPowerOn        = "instance.power_on"
	EventPoweredOn      = "instance.powered_on"
	EventReboot         = "instance.reboot"
	EventRescue         = "instance.rescue"
	EventDeprovisioning = "instance.deprovisioning"
	EventDeleted        = "instance.deleted"
	EventPortBonded     = "port.bonded"
	EventPortDisbonded  = "port.disbonded"
	EventPortLayer2     = "port.converted_to_layer2"
	EventPortLayer3     = "port.converted_to_layer3"
	EventVLANAssigned   = "port.vlan_assigned"
	EventVLANUnassigned = "port.vlan_unassigned"
	EventNativeVLAN     = "port.native_vlan_assigned"
	EventNativeVLANGone = "port.native_vlan_removed"
	EventIPAssigned     = "ip.assigned"
	EventIPUnassigned   = "ip.unassigned"
	EventBGPSession     = "bgp.session_created"
	EventUserState      = "user.state"
	EventPhoneHome      = "instance.phone_home"
)

// recordEventLocked appends an event to d. body may say "{{ device }}"; the
// interpolated text names the hostname, as the API's events did.
func (s *Simulator) recordEventLocked(d *device, at time.Time, typ, state, body string) {
	id := s.ids.uuid()
	d.events = append(d.events, metalv1.Event{
		Id:            ptr(id),
		Href:          ptr(apiPrefix + "/events/" + id),
		Type:          ptr(typ),
		State:         ptr(state),
		Body:          ptr(body),
		Interpolated:  ptr(strings.ReplaceAll(body, "{{ device }}", d.hostname())),
		CreatedAt:     ptr(at),
		Relationships: []metalv1.Href{{Href: deviceHref(d.id())}},
	})
}

func (s *Simulator) findDeviceEvents(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	pr := c.pagination()
	newestFirst := make([]metalv1.Event, 0, len(d.events))
	for i := len(d.events) - 1; i >= 0; i-- {
		newestFirst = append(newestFirst, d.events[i])
	}
	lo, hi := pr.bounds(len(newestFirst))
	return jsonReply(200, metalv1.EventList{Events: newestFirst[lo:hi], Meta: c.meta(len(newestFirst), pr)})
}

func (s *Simulator) findEventByID(c *call) (reply, error) {
	id := c.pathValue("id")
	for _, d := range s.devices {
		for _, e := range d.events {
			if e.GetId() != id {
				continue
			}
			if !c.projects[d.project.id] {
				return reply{}, c.forbidden("You are not authorized to view this event")
			}
			return jsonReply(200, e)
		}
	}
	return reply{}, errNotFound()
}
