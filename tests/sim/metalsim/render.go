package metalsim

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// includes holds a request's include and exclude parameters. Nested objects
// are rendered as {"href": ...} unless included; excluded fields are
// dropped (or reduced to their href).
type includes struct {
	include, exclude map[string]bool
	all              bool
	// shallowVLANs renders included VLANs without their instances.
	shallowVLANs bool
}

func (c *call) includes() includes {
	in := includes{include: map[string]bool{}, exclude: map[string]bool{}}
	for _, v := range c.list("include") {
		in.include[v] = true
	}
	for _, v := range c.list("exclude") {
		in.exclude[v] = true
	}
	return in
}

// everything includes every nested object, for snapshots handed to Go
// callers, except the instances of nested VLANs: every device on a VLAN is
// one of them, so with them each copy of a device would grow with the fleet.
var everything = includes{all: true, shallowVLANs: true}

// has reports whether name is included. Dotted names ("network_ports.
// virtual_networks") match on their last element too, since the API took
// both forms.
func (in includes) has(names ...string) bool {
	if in.all {
		return true
	}
	for _, n := range names {
		if in.include[n] {
			return true
		}
		for k := range in.include {
			if strings.HasSuffix(k, "."+n) {
				return true
			}
		}
	}
	return false
}

func (in includes) excluded(name string) bool { return !in.all && in.exclude[name] }

// hrefOnly carries an href on models that have no Href field (plan, metro,
// facility); the SDK keeps it in AdditionalProperties.
func hrefOnly(href string) map[string]interface{} { return map[string]interface{}{"href": href} }

func (s *Simulator) renderDevice(d *device, in includes, now time.Time) metalv1.Device {
	out := d.obj
	out.Tags = append([]string{}, d.obj.Tags...)
	out.State = ptr(d.state)
	out.OperatingSystem = d.os.operatingSystem()
	out.ProjectLite = &metalv1.DeviceProjectLite{Href: projectHref(d.project.id)}
	out.Actions = deviceActions(d.state)
	out.NetworkPorts = s.renderPorts(d, vlanDetail(in))
	out.IpAddresses = []metalv1.IPAssignment{}
	for _, a := range d.ips {
		out.IpAddresses = append(out.IpAddresses, s.renderAssignment(a))
	}
	if d.state == metalv1.DEVICESTATE_QUEUED || d.state == metalv1.DEVICESTATE_PROVISIONING {
		out.ProvisioningPercentage = ptr(provisioningPercentage(d, now))
	}
	s.renderDeviceRelations(&out, d, in)
	if len(in.exclude) > 0 && !in.all {
		clearJSONFields(&out, without(in.exclude, deviceRelations...))
	}
	return out
}

// vlanDetail says how a device's or port's VLANs are rendered.
func vlanDetail(in includes) vlanRendering {
	switch {
	case !in.has("virtual_networks", "native_virtual_network"):
		return vlanHrefs
	case in.shallowVLANs:
		return vlanShallow
	default:
		return vlanFull
	}
}

// deviceRelations are the nested objects that exclude reduces to an href
// instead of dropping.
var deviceRelations = []string{"project", "plan", "metro", "facility", "hardware_reservation", "operating_system"}

func without(set map[string]bool, names ...string) map[string]bool {
	out := make(map[string]bool, len(set))
	for k, v := range set {
		out[k] = v
	}
	for _, n := range names {
		delete(out, n)
	}
	return out
}

func (s *Simulator) renderDeviceRelations(out *metalv1.Device, d *device, in includes) {
	if in.has("project") && !in.excluded("project") {
		out.Project = renderProject(d.project)
	} else {
		out.Project = &metalv1.Project{Href: ptr(projectHref(d.project.id))}
	}
	// Plan, metro and facility come in full without include, as the API's
	// device reads did (the Equinix CCM reads plan.slug, metro.code and
	// facility.code from a plain GET); exclude reduces them to the href.
	if !in.excluded("plan") {
		out.Plan = ptr(d.plan.plan())
	} else {
		out.Plan = &metalv1.Plan{AdditionalProperties: hrefOnly(planHref(d.plan))}
	}
	if !in.excluded("metro") {
		out.Metro = d.metro.deviceMetro()
		out.Metro.AdditionalProperties = hrefOnly(metroHref(d.metro))
	} else {
		out.Metro = &metalv1.DeviceMetro{AdditionalProperties: hrefOnly(metroHref(d.metro))}
	}
	if !in.excluded("facility") {
		out.Facility = d.facility.facility()
	} else {
		out.Facility = &metalv1.Facility{AdditionalProperties: hrefOnly(facilityHref(d.facility))}
	}
	if in.excluded("operating_system") {
		out.OperatingSystem = &metalv1.OperatingSystem{AdditionalProperties: hrefOnly(apiPrefix + "/operating-systems/" + d.os.id)}
	}
	if r := d.reservation; r != nil {
		if in.has("hardware_reservation") && !in.excluded("hardware_reservation") {
			out.HardwareReservation = ptr(s.renderHardwareReservation(r, includes{}, s.clock.Now()))
		} else {
			out.HardwareReservation = &metalv1.HardwareReservation{Href: ptr(hwReservationHref(r.id))}
		}
	}
}

func renderProject(p *project) *metalv1.Project {
	return &metalv1.Project{
		Id:        ptr(p.id),
		Href:      ptr(projectHref(p.id)),
		Name:      ptr(p.name),
		CreatedAt: ptr(p.createdAt),
		UpdatedAt: ptr(p.createdAt),
		BgpConfig: &metalv1.Href{Href: projectHref(p.id) + "/bgp-config"},
	}
}

// deviceActions lists the actions the device accepts in state.
func deviceActions(state metalv1.DeviceState) []metalv1.DeviceActionsInner {
	names := map[string]string{
		"power_on": "Power On", "power_off": "Power Off", "reboot": "Reboot",
		"reinstall": "Reinstall", "rescue": "Rescue",
	}
	out := []metalv1.DeviceActionsInner{}
	for _, a := range allowedActions[state] {
		out = append(out, metalv1.DeviceActionsInner{Type: ptr(a), Name: ptr(names[a])})
	}
	return out
}

func provisioningPercentage(d *device, now time.Time) float32 {
	if d.state == metalv1.DEVICESTATE_QUEUED {
		return 0
	}
	total := d.stateDone.Sub(d.stateAt)
	if total <= 0 {
		return 99
	}
	pct := float32(now.Sub(d.stateAt)) / float32(total) * 100
	return min(max(pct, 0), 99)
}

// deepCopy returns a deep copy of a device's view (notificationView). The
// JSON round trip through the SDK both copies and proves decodability; it
// is most of a snapshot's cost, so it runs outside the simulator lock,
// which the view does not need.
func deepCopy(view metalv1.Device) metalv1.Device {
	var out metalv1.Device
	if err := roundTrip(view, &out); err != nil {
		// The render only uses SDK types, so this cannot fail short of an SDK
		// bug; surface it loudly rather than hand out a half-copied device.
		panic(fmt.Sprintf("simulator: copy device %s: %v", view.GetId(), err))
	}
	return out
}

// notificationView is the device as a Notification carries it: rendered
// with everything included into fresh structs, without the JSON round trip
// of deepCopy, which cost most of a notification. The strings and
// times it points to are never changed in place by the simulator (updates
// replace them), and the maps and slices a subscriber might touch are
// copied, so later changes to the device do not show up in it.
func (s *Simulator) notificationView(d *device, now time.Time) metalv1.Device {
	out := s.renderDevice(d, everything, now)
	out.Customdata = copyMap(d.obj.Customdata)
	out.SshKeys = append([]metalv1.Href{}, d.obj.SshKeys...)
	if cb := d.obj.CreatedBy; cb != nil {
		c := *cb
		out.CreatedBy = &c
	}
	return out
}

func roundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("marshal: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("unmarshal: %w", err)
	}
	return nil
}

// clearJSONFields zeroes the fields of the struct behind ptr whose JSON
// name is in names, implementing the API's exclude parameter.
func clearJSONFields(ptr any, names map[string]bool) {
	v := reflect.ValueOf(ptr).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if names[name] {
			v.Field(i).Set(reflect.Zero(t.Field(i).Type))
		}
	}
}
