package metalsim

import (
	"fmt"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

func (s *Simulator) updateDevice(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	if d.state == metalv1.DEVICESTATE_DEPROVISIONING {
		return reply{}, errConflict("Cannot update a device while it is deprovisioning")
	}
	var in metalv1.DeviceUpdateInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	if err := validateUpdate(d, in); err != nil {
		return reply{}, err
	}
	applyUpdate(d, in, c.now)
	s.recordEventLocked(d, c.now, EventUpdated, "success", "{{ device }} was updated")
	s.notifyLocked(DeviceUpdated, d, c.now, nil)
	return jsonReply(200, s.renderDevice(d, c.includes(), c.now))
}

func validateUpdate(d *device, in metalv1.DeviceUpdateInput) error {
	var errs []string
	if in.Hostname != nil && !hostnameRE.MatchString(*in.Hostname) {
		errs = append(errs, fmt.Sprintf("Hostname is invalid, %s", *in.Hostname))
	}
	if in.BillingCycle != nil && !metalv1.DeviceCreateInputBillingCycle(*in.BillingCycle).IsValid() {
		errs = append(errs, fmt.Sprintf("Billing cycle %s is not valid", *in.BillingCycle))
	}
	scriptURL := d.obj.GetIpxeScriptUrl()
	if in.IpxeScriptUrl != nil {
		scriptURL = *in.IpxeScriptUrl
	}
	userdata := d.obj.GetUserdata()
	if in.Userdata != nil {
		userdata = *in.Userdata
	}
	errs = append(errs, ipxeProblems(d.os.slug, scriptURL, userdata)...)
	if len(errs) > 0 {
		return errInvalid(errs...)
	}
	return nil
}

func applyUpdate(d *device, in metalv1.DeviceUpdateInput, now time.Time) {
	o := &d.obj
	setIf(&o.AlwaysPxe, in.AlwaysPxe)
	setIf(&o.BillingCycle, in.BillingCycle)
	setIf(&o.Description, in.Description)
	setIf(&o.Hostname, in.Hostname)
	setIf(&o.FirmwareSetId, in.FirmwareSetId)
	setIf(&o.Locked, in.Locked)
	setIf(&o.NetworkFrozen, in.NetworkFrozen)
	setIf(&o.SpotInstance, in.SpotInstance)
	setIf(&o.Userdata, in.Userdata)
	if in.IpxeScriptUrl != nil {
		o.IpxeScriptUrl = nil
		if *in.IpxeScriptUrl != "" {
			o.IpxeScriptUrl = ptr(*in.IpxeScriptUrl)
		}
	}
	if in.Customdata != nil {
		o.Customdata = copyMap(in.Customdata)
	}
	if in.Tags != nil {
		d.project.unindexTags(d, o.Tags)
		o.Tags = append([]string{}, in.Tags...)
		d.project.indexTags(d, o.Tags)
	}
	o.UpdatedAt = ptr(now)
}

func setIf[T any](dst **T, v *T) {
	if v != nil {
		*dst = ptr(*v)
	}
}
