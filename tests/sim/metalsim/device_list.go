package metalsim

import (
	"slices"
	"strings"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

func (s *Simulator) findDeviceByID(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return jsonReply(200, s.renderDevice(d, c.includes(), c.now))
}

func (s *Simulator) findProjectDevices(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	pr := c.pagination()
	match, filtered, err := deviceFilter(c)
	if err != nil {
		return reply{}, err
	}
	// The tag filter picks from the tag's own list; other filters test
	// each candidate (the page's meta needs the total anyway).
	devs := p.devices.all()
	if tag := c.query("tag"); tag != "" {
		devs = p.taggedDevices(tag)
	}
	if filtered {
		var kept []*device
		for _, d := range devs {
			if match(d) {
				kept = append(kept, d)
			}
		}
		devs = kept
	}
	lo, hi := pr.bounds(len(devs))
	in := c.includes()
	list := metalv1.DeviceList{Devices: []metalv1.Device{}, Meta: c.meta(len(devs), pr)}
	for _, d := range devs[lo:hi] {
		list.Devices = append(list.Devices, s.renderDevice(d, in, c.now))
	}
	return jsonReply(200, list)
}

// deviceFilter builds the predicate of the project device list filters
// other than tag, and says whether there are any.
func deviceFilter(c *call) (func(*device) bool, bool, error) {
	var preds []func(*device) bool
	add := func(p func(*device) bool) { preds = append(preds, p) }
	if h := strings.ToLower(c.query("hostname")); h != "" {
		add(func(d *device) bool { return strings.Contains(strings.ToLower(d.hostname()), h) })
	}
	if mac := strings.ToLower(c.query("mac_address")); mac != "" {
		add(func(d *device) bool { return deviceHasMAC(d, mac) })
	}
	if m := c.query("metro"); m != "" {
		add(func(d *device) bool { return d.metro.code == m || d.metro.id == m })
	}
	if f := c.query("facility"); f != "" {
		add(func(d *device) bool { return d.facility.code == f || d.facility.id == f })
	}
	if q := strings.ToLower(c.query("search")); q != "" {
		add(func(d *device) bool { return deviceMatchesSearch(d, q) })
	}
	if t := c.query("type"); t != "" {
		add(func(d *device) bool { return deviceKind(d) == t })
	}
	if c.query("reserved") != "" {
		want, err := c.boolQuery("reserved")
		if err != nil {
			return nil, false, err
		}
		add(func(d *device) bool { return (d.reservation != nil) == want })
	}
	if c.query("has_termination_time") != "" {
		want, err := c.boolQuery("has_termination_time")
		if err != nil {
			return nil, false, err
		}
		add(func(d *device) bool { return (d.obj.TerminationTime != nil) == want })
	}
	if cats := c.list("categories"); len(cats) > 0 {
		add(func(d *device) bool {
			return slices.ContainsFunc(cats, func(cat string) bool { return slices.Contains(d.plan.categories, cat) })
		})
	}
	return func(d *device) bool {
		for _, p := range preds {
			if !p(d) {
				return false
			}
		}
		return true
	}, len(preds) > 0, nil
}

func deviceHasMAC(d *device, mac string) bool {
	if d.state == metalv1.DEVICESTATE_QUEUED {
		return false
	}
	for _, p := range d.ports {
		if p.mac != "" && strings.EqualFold(p.mac, mac) {
			return true
		}
	}
	return false
}

func deviceKind(d *device) string {
	switch {
	case d.reservation != nil:
		return "reserved"
	case d.obj.GetSpotInstance():
		return "spot"
	default:
		return "ondemand"
	}
}

func deviceMatchesSearch(d *device, q string) bool {
	fields := []string{
		d.hostname(), d.obj.GetDescription(), d.obj.GetShortId(), d.plan.slug, d.plan.name,
		d.facility.code, d.facility.name, d.os.name, d.os.slug,
	}
	fields = append(fields, d.obj.Tags...)
	if d.reservation != nil {
		fields = append(fields, d.reservation.shortID)
	}
	for _, a := range d.ips {
		fields = append(fields, a.prefix.Addr().String())
	}
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), q) {
			return true
		}
	}
	return false
}
