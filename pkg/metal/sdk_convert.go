package metal

import (
	"path"
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// Conversions from SDK models to ours. Nested objects may come back as
// references ({"href": ...}); their IDs are the last path element.

func idOf(id, href *string) string {
	if id != nil && *id != "" {
		return *id
	}
	if href != nil && *href != "" {
		return path.Base(*href)
	}
	return ""
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func fromDevice(d *metalv1.Device) *Device {
	if d == nil {
		return nil
	}
	out := &Device{
		ID:                     idOf(d.Id, d.Href),
		ShortID:                d.GetShortId(),
		Hostname:               d.GetHostname(),
		State:                  DeviceState(d.GetState()),
		Tags:                   append([]string(nil), d.Tags...),
		BillingCycle:           d.GetBillingCycle(),
		IPXEScriptURL:          d.GetIpxeScriptUrl(),
		AlwaysPXE:              d.GetAlwaysPxe(),
		Locked:                 d.GetLocked(),
		Spot:                   d.GetSpotInstance(),
		CreatedAt:              timeOf(d.CreatedAt),
		UpdatedAt:              timeOf(d.UpdatedAt),
		ProvisioningPercentage: float64(d.GetProvisioningPercentage()),
	}
	if d.Plan != nil {
		out.Plan = d.Plan.GetSlug()
		if out.Plan != "" {
			p := fromPlan(d.Plan)
			out.PlanDetails = &p
		}
	}
	if d.Metro != nil {
		out.Metro = strings.ToLower(d.Metro.GetCode())
	}
	if d.Facility != nil {
		out.Facility = strings.ToLower(d.Facility.GetCode())
	}
	if d.TerminationTime != nil {
		out.TerminationTime = *d.TerminationTime
	}
	if d.OperatingSystem != nil {
		out.OperatingSystem = d.OperatingSystem.GetSlug()
	}
	if d.Project != nil {
		out.ProjectID = idOf(d.Project.Id, d.Project.Href)
	}
	if d.HardwareReservation != nil {
		out.HardwareReservationID = idOf(d.HardwareReservation.Id, d.HardwareReservation.Href)
	}
	for i := range d.NetworkPorts {
		out.Ports = append(out.Ports, fromPort(&d.NetworkPorts[i]))
	}
	for i := range d.IpAddresses {
		out.IPAddresses = append(out.IPAddresses, fromIPAssignment(&d.IpAddresses[i]))
	}
	return out
}

func fromPort(p *metalv1.Port) Port {
	out := Port{
		ID:               idOf(p.Id, p.Href),
		Name:             p.GetName(),
		Type:             PortType(p.GetType()),
		NetworkType:      NetworkType(p.GetNetworkType()),
		DisbondSupported: p.GetDisbondOperationSupported(),
	}
	if p.Data != nil {
		out.MAC = strings.ToLower(p.Data.GetMac())
		out.Bonded = p.Data.GetBonded()
	}
	if p.Bond != nil {
		out.BondID = p.Bond.GetId()
		out.BondName = p.Bond.GetName()
	}
	if p.NativeVirtualNetwork != nil {
		out.NativeVLANID = idOf(p.NativeVirtualNetwork.Id, p.NativeVirtualNetwork.Href)
	}
	for i := range p.VirtualNetworks {
		vn := &p.VirtualNetworks[i]
		out.VLANs = append(out.VLANs, VLANRef{ID: idOf(vn.Id, vn.Href), VXLAN: int(vn.GetVxlan())})
	}
	return out
}

func fromVirtualNetwork(v *metalv1.VirtualNetwork) *VirtualNetwork {
	if v == nil {
		return nil
	}
	out := &VirtualNetwork{
		ID:              idOf(v.Id, v.Href),
		VXLAN:           int(v.GetVxlan()),
		Metro:           strings.ToLower(v.GetMetroCode()),
		Description:     v.GetDescription(),
		Tags:            append([]string(nil), v.Tags...),
		AssignedDevices: len(v.Instances),
		CreatedAt:       timeOf(v.CreatedAt),
	}
	if out.Metro == "" && v.Metro != nil {
		out.Metro = strings.ToLower(v.Metro.GetCode())
	}
	return out
}

func fromEvent(e *metalv1.Event) Event {
	return Event{
		ID:           idOf(e.Id, e.Href),
		DeviceID:     deviceOfEvent(e.Relationships),
		Type:         e.GetType(),
		State:        e.GetState(),
		Body:         e.GetBody(),
		Interpolated: e.GetInterpolated(),
		CreatedAt:    timeOf(e.CreatedAt),
	}
}

func fromPlan(p *metalv1.Plan) Plan {
	out := Plan{
		ID:     p.GetId(),
		Slug:   p.GetSlug(),
		Name:   p.GetName(),
		Class:  p.GetClass(),
		Type:   string(p.GetType()),
		Line:   p.GetLine(),
		Legacy: p.GetLegacy(),
	}
	s := p.Specs
	if s == nil {
		return out
	}
	for _, c := range s.Cpus {
		out.CPUs = append(out.CPUs, PlanComponent{Count: int(c.GetCount()), Type: c.GetType()})
	}
	for _, n := range s.Nics {
		out.NICs = append(out.NICs, PlanComponent{Count: int(n.GetCount()), Type: n.GetType()})
	}
	for _, d := range s.Drives {
		out.Drives = append(out.Drives, PlanDrive{Count: int(d.GetCount()), Type: d.GetType(), Size: d.GetSize(), Category: d.GetCategory()})
	}
	if s.Memory != nil {
		out.Memory = s.Memory.GetTotal()
	}
	if s.Features != nil {
		out.UEFI = s.Features.GetUefi()
		out.RAID = s.Features.GetRaid()
	}
	return out
}

// deviceOfEvent finds the device among an event's relationships: the one
// whose href is /metal/v1/devices/<id>.
func deviceOfEvent(rel []metalv1.Href) string {
	for _, r := range rel {
		if dir, id := path.Split(strings.TrimSuffix(r.Href, "/")); id != "" && strings.HasSuffix(dir, "/devices/") {
			return id
		}
	}
	return ""
}
