package metalsim

import (
	"fmt"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// allowedActions lists the actions each state accepts; every other
// combination answers 422.
var allowedActions = map[metalv1.DeviceState][]string{
	metalv1.DEVICESTATE_ACTIVE:   {"power_off", "reboot", "reinstall", "rescue"},
	metalv1.DEVICESTATE_INACTIVE: {"power_on", "reinstall"},
}

// afterLocked runs fn after dur unless the device was deleted or a newer
// operation was started on it in the meantime.
func (s *Simulator) afterLocked(d *device, from time.Time, dur time.Duration, fn func(at time.Time)) {
	gen := d.gen
	s.scheduleLocked(from, dur, func(at time.Time) {
		if d.gone || d.gen != gen {
			return
		}
		fn(at)
	})
}

// setStateLocked moves d to state, records the event and notifies.
func (s *Simulator) setStateLocked(d *device, state metalv1.DeviceState, at time.Time, eventType, body string) {
	prev := d.state
	d.state = state
	d.stateAt = at
	d.stateDone = at
	d.obj.UpdatedAt = ptr(at)
	eventState := "success"
	if state == metalv1.DEVICESTATE_FAILED {
		eventState = "failure"
	}
	s.recordEventLocked(d, at, eventType, eventState, body)
	s.notifyLocked(DeviceStateChanged, d, at, func(n *Notification) { n.PreviousState = prev })
}

// startProvisionLocked runs queued -> provisioning -> active (or failed).
// A custom_ipxe device turns active the moment its script is handed out.
func (s *Simulator) startProvisionLocked(d *device, now time.Time) {
	d.state = metalv1.DEVICESTATE_QUEUED
	d.stateAt, d.stateDone = now, now
	s.recordEventLocked(d, now, EventCreated, "success", "{{ device }} was created and queued for provisioning")
	s.notifyLocked(DeviceCreated, d, now, nil)
	s.afterLocked(d, now, s.timings.Queue, func(at time.Time) {
		dur := s.timings.Provision
		if d.os.slug == OSCustomIPXE {
			dur = s.timings.IPXEBoot
		}
		s.setStateLocked(d, metalv1.DEVICESTATE_PROVISIONING, at, EventProvisioning, "Provisioning of {{ device }} started")
		if d.os.slug != OSCustomIPXE {
			// The installer is PXE-booted at once; a custom iPXE script
			// is served only at the end.
			s.recordEventLocked(d, at, EventDHCP, "success", dhcpBody)
		}
		d.stateDone = at.Add(dur)
		s.afterLocked(d, at, dur, func(at time.Time) { s.finishProvisionLocked(d, at) })
	})
}

func (s *Simulator) finishProvisionLocked(d *device, at time.Time) {
	if d.failProvision {
		s.setStateLocked(d, metalv1.DEVICESTATE_FAILED, at, EventFailed, "Provisioning of {{ device }} failed")
		return
	}
	if d.os.slug == OSCustomIPXE {
		s.recordEventLocked(d, at, EventIPXEHandedOut, "success", dhcpBody)
	} else {
		s.recordEventLocked(d, at, EventOSInstalled, "success", "Operating system packages installed")
		s.recordEventLocked(d, at, EventProvisioned, "success", "Provisioning of {{ device }} completed")
	}
	s.setStateLocked(d, metalv1.DEVICESTATE_ACTIVE, at, EventActive, "{{ device }} is active")
	s.bootLocked(d, at, BootProvision, false)
	if lead := d.reclaimLead; lead != nil {
		d.reclaimLead = nil
		s.setTerminationLocked(d, at.Add(*lead), at)
	}
}

// dhcpBody is the body of the API's provisioning.104.01 event, posted
// whenever a device PXE-boots through the platform.
const dhcpBody = "Device connected to DHCP system"

// bootLocked records and notifies a boot. iPXE runs on a custom_ipxe
// device's first boot and reinstalls, and on every boot with always_pxe.
func (s *Simulator) bootLocked(d *device, at time.Time, reason BootReason, preserveData bool) {
	if reason != BootProvision {
		// Every boot goes through the platform's DHCP and PXE first (the
		// first one was recorded by provisioning).
		s.recordEventLocked(d, at, EventDHCP, "success", dhcpBody)
	}
	custom := d.os.slug == OSCustomIPXE
	pxe := custom && (reason == BootProvision || reason == BootReinstall || (d.obj.GetAlwaysPxe() && reason != BootRescue))
	b := &Boot{
		Reason:          reason,
		PXE:             pxe,
		OperatingSystem: d.os.slug,
		AlwaysPXE:       d.obj.GetAlwaysPxe(),
		PreserveData:    preserveData,
	}
	if pxe {
		if u := d.obj.GetIpxeScriptUrl(); u != "" {
			b.IPXEScriptURL = u
		} else {
			b.ScriptFromUserdata = true
			b.IPXEScript = d.obj.GetUserdata()
		}
	}
	s.notifyLocked(DeviceBooted, d, at, func(n *Notification) { n.Boot = b })
}

func (s *Simulator) performAction(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	var in metalv1.DeviceActionInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	action := string(in.Type)
	if !actionAllowed(d.state, action) {
		return reply{}, errConflict("Cannot %s a device while it is %s", actionVerb(action), d.state)
	}
	switch in.Type {
	case metalv1.DEVICEACTIONINPUTTYPE_REINSTALL:
		if err := s.reinstallLocked(d, in, c.now); err != nil {
			return reply{}, err
		}
	case metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF:
		s.powerOffLocked(d, c.now)
	case metalv1.DEVICEACTIONINPUTTYPE_POWER_ON:
		s.powerOnLocked(d, c.now)
	case metalv1.DEVICEACTIONINPUTTYPE_REBOOT:
		s.rebootLocked(d, c.now, BootReboot, EventReboot, "{{ device }} is rebooting")
	case metalv1.DEVICEACTIONINPUTTYPE_RESCUE:
		s.rebootLocked(d, c.now, BootRescue, EventRescue, "{{ device }} is booting into rescue mode")
	}
	return emptyReply(202)
}

func actionAllowed(state metalv1.DeviceState, action string) bool {
	for _, a := range allowedActions[state] {
		if a == action {
			return true
		}
	}
	return false
}

func actionVerb(action string) string {
	switch action {
	case "power_on":
		return "power on"
	case "power_off":
		return "power off"
	}
	return action
}

func (s *Simulator) reinstallLocked(d *device, in metalv1.DeviceActionInput, now time.Time) error {
	os := d.os
	if slug := in.GetOperatingSystem(); slug != "" {
		var ok bool
		if os, ok = findOS(slug); !ok {
			return errInvalid(fmt.Sprintf("Operating system %s is not valid", slug))
		}
	}
	scriptURL := d.obj.GetIpxeScriptUrl()
	if in.IpxeScriptUrl != nil {
		scriptURL = in.GetIpxeScriptUrl()
	}
	if os.slug != OSCustomIPXE && in.IpxeScriptUrl == nil {
		scriptURL = ""
	}
	if errs := ipxeProblems(os.slug, scriptURL, d.obj.GetUserdata()); len(errs) > 0 {
		return errInvalid(errs...)
	}
	d.os = os
	d.obj.IpxeScriptUrl = nil
	if scriptURL != "" {
		d.obj.IpxeScriptUrl = ptr(scriptURL)
	}
	preserve := in.GetPreserveData()
	dur := s.timings.Reinstall
	if os.slug == OSCustomIPXE {
		dur = s.timings.IPXEBoot
	}
	if !preserve || !in.GetDeprovisionFast() {
		dur += s.timings.DiskWipe
	}
	d.gen++
	s.setStateLocked(d, metalv1.DEVICESTATE_REINSTALLING, now, EventReinstall,
		fmt.Sprintf("{{ device }} is being reinstalled with %s", os.slug))
	d.stateDone = now.Add(dur)
	s.afterLocked(d, now, dur, func(at time.Time) {
		s.setStateLocked(d, metalv1.DEVICESTATE_ACTIVE, at, EventReinstalled, "{{ device }} was reinstalled")
		s.bootLocked(d, at, BootReinstall, preserve)
	})
	return nil
}

func (s *Simulator) powerOffLocked(d *device, now time.Time) {
	d.gen++
	s.setStateLocked(d, metalv1.DEVICESTATE_POWERING_OFF, now, EventPowerOff, "{{ device }} is powering off")
	s.afterLocked(d, now, s.timings.Power, func(at time.Time) {
		s.setStateLocked(d, metalv1.DEVICESTATE_INACTIVE, at, EventPoweredOff, "{{ device }} is powered off")
		s.notifyLocked(DevicePoweredOff, d, at, nil)
	})
}

func (s *Simulator) powerOnLocked(d *device, now time.Time) {
	d.gen++
	s.setStateLocked(d, metalv1.DEVICESTATE_POWERING_ON, now, EventPowerOn, "{{ device }} is powering on")
	s.afterLocked(d, now, s.timings.Power, func(at time.Time) {
		s.setStateLocked(d, metalv1.DEVICESTATE_ACTIVE, at, EventPoweredOn, "{{ device }} is powered on")
		s.bootLocked(d, at, BootPowerOn, false)
	})
}

// rebootLocked handles reboot and rescue: the state stays active and the
// boot is notified once the machine is back.
func (s *Simulator) rebootLocked(d *device, now time.Time, reason BootReason, eventType, body string) {
	d.gen++
	s.recordEventLocked(d, now, eventType, "success", body)
	s.notifyLocked(DeviceRebooting, d, now, func(n *Notification) { n.Boot = &Boot{Reason: reason, OperatingSystem: d.os.slug} })
	s.afterLocked(d, now, s.timings.Power, func(at time.Time) { s.bootLocked(d, at, reason, false) })
}

func (s *Simulator) deleteDevice(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	force, err := c.boolQuery("force_delete")
	if err != nil {
		return reply{}, err
	}
	switch d.state {
	case metalv1.DEVICESTATE_QUEUED, metalv1.DEVICESTATE_PROVISIONING:
		// Observed on the real API (redhat-cop/agnosticd #4307).
		return reply{}, errConflict("Cannot delete a device while it is provisioning")
	case metalv1.DEVICESTATE_REINSTALLING, metalv1.DEVICESTATE_DEPROVISIONING:
		return reply{}, errConflict("Cannot delete a device while it is %s", d.state)
	}
	if d.obj.GetLocked() {
		return reply{}, errConflict("Cannot delete a locked device, unlock it first")
	}
	d.gen++
	body := "{{ device }} is being deprovisioned"
	if force {
		body += " (forced)"
	}
	s.setStateLocked(d, metalv1.DEVICESTATE_DEPROVISIONING, c.now, EventDeprovisioning, body)
	s.afterLocked(d, c.now, s.timings.Deprovision, func(at time.Time) { s.removeDeviceLocked(d, at, false) })
	return emptyReply(204)
}

// removeDeviceLocked deletes d and everything hanging off it.
func (s *Simulator) removeDeviceLocked(d *device, at time.Time, outOfBand bool) {
	prev := d.state
	d.state = metalv1.DEVICESTATE_DELETED
	s.recordEventLocked(d, at, EventDeleted, "success", "{{ device }} was deleted")
	s.notifyLocked(DeviceDeleted, d, at, func(n *Notification) {
		n.OutOfBand = outOfBand
		n.PreviousState = prev
	})
	d.gone = true
	s.releaseSpotLocked(d)
	delete(s.devices, d.id())
	d.project.unindexDevice(d)
	for _, a := range append([]*ipAssignment(nil), d.ips...) {
		s.unassignLocked(a)
	}
	for _, p := range d.ports {
		for _, v := range p.vlans {
			v.detach(p)
		}
		delete(s.ports, p.id)
	}
	for _, bs := range d.sessions {
		delete(s.sessions, bs.obj.GetId())
	}
	if r := d.reservation; r != nil {
		r.device = nil
		r.provisionableAt = at.Add(s.timings.ReservationRelease)
	}
}
