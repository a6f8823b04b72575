package metal

import (
	"context"
	"net/http"
	"strings"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// deviceIncludes expands the references the controllers read. Plan, metro
// and facility come in full anyway; naming them costs nothing and keeps
// them full should a proxy or an older API version differ. The ports' VLANs stay hrefs on
// purpose: an expanded VLAN lists every device using it, so with them a
// device read grew with the pool (at 2,000 servers sharing two VLANs, a
// quarter of a megabyte per read, make bench). Their IDs are resolved
// against the metro's VLAN list, which the networking chain reads anyway.
var deviceIncludes = []string{"plan", "metro", "operating_system", "hardware_reservation"}

// deviceExcludes keeps the join token (userdata) and the root password off
// the wire where the API honours it. The API documents exclude for nested
// objects; that it drops these fields is (inferred), and where it does not
// the model ignores them anyway.
var deviceExcludes = []string{"userdata", "root_password"}

// briefExcludes also leaves out the ports and addresses, and reduces plan,
// metro, facility and operating system (which the API sends in full) to
// references, for lists that only need to know which devices exist
// (ListDevicesOptions.Brief).
var briefExcludes = []string{"userdata", "root_password", "network_ports", "ip_addresses",
	"plan", "metro", "facility", "operating_system"}

func (c *sdkClient) CreateDevice(ctx context.Context, req CreateDeviceRequest) (*Device, error) {
	in := createInput(req)
	var d *metalv1.Device
	err := c.do(ctx, OpCreateDevice, func(ctx context.Context) (resp *http.Response, err error) {
		d, resp, err = c.api.DevicesApi.CreateDevice(ctx, c.projectID).
			CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).
			Include(deviceIncludes).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return fromDevice(d), nil
}

func createInput(req CreateDeviceRequest) metalv1.DeviceCreateInMetroInput {
	in := metalv1.DeviceCreateInMetroInput{
		Metro:           req.Metro,
		Plan:            req.Plan,
		OperatingSystem: req.OperatingSystem,
		Tags:            req.Tags,
		ProjectSshKeys:  req.ProjectSSHKeys,
		UserSshKeys:     req.UserSSHKeys,
		Customdata:      req.Customdata,
		TerminationTime: req.TerminationTime,
		AlwaysPxe:       metalv1.PtrBool(req.AlwaysPXE),
	}
	if req.BillingCycle != "" {
		bc := metalv1.DeviceCreateInputBillingCycle(req.BillingCycle)
		in.BillingCycle = &bc
	}
	in.Hostname = optString(req.Hostname)
	in.Description = optString(req.Description)
	in.IpxeScriptUrl = optString(req.IPXEScriptURL)
	in.Userdata = optString(string(req.Userdata))
	in.HardwareReservationId = optString(req.HardwareReservationID)
	if req.Locked {
		in.Locked = metalv1.PtrBool(true)
	}
	if req.NoSSHKeys {
		in.NoSshKeys = metalv1.PtrBool(true)
	}
	if req.SpotInstance {
		in.SpotInstance = metalv1.PtrBool(true)
		in.SpotPriceMax = metalv1.PtrFloat32(float32(req.SpotPriceMax))
	}
	return in
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (c *sdkClient) GetDevice(ctx context.Context, id string) (*Device, error) {
	if err := requireID(OpGetDevice, "device ID", id); err != nil {
		return nil, err
	}
	var d *metalv1.Device
	err := c.do(ctx, OpGetDevice, func(ctx context.Context) (resp *http.Response, err error) {
		d, resp, err = c.api.DevicesApi.FindDeviceById(ctx, id).Include(deviceIncludes).Exclude(deviceExcludes).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return fromDevice(d), nil
}

func (c *sdkClient) ListDevices(ctx context.Context, opts ListDevicesOptions) ([]Device, error) {
	includes, excludes := deviceIncludes, deviceExcludes
	if opts.Brief {
		includes, excludes = nil, briefExcludes
	}
	return paginate(ctx, c, OpListDevices,
		func(ctx context.Context, page int32) ([]metalv1.Device, *metalv1.Meta, *http.Response, error) {
			r := c.api.DevicesApi.FindProjectDevices(ctx, c.projectID).Exclude(excludes).Page(page).PerPage(perPage)
			if len(includes) > 0 {
				r = r.Include(includes)
			}
			if opts.Tag != "" {
				r = r.Tag(opts.Tag)
			}
			if opts.Hostname != "" {
				r = r.Hostname(opts.Hostname)
			}
			if opts.Metro != "" {
				r = r.Metro(opts.Metro)
			}
			if opts.WithTerminationTime {
				r = r.HasTerminationTime(true)
			}
			list, resp, err := r.Execute()
			if list == nil {
				return nil, nil, resp, err
			}
			return list.Devices, list.Meta, resp, err
		},
		func(sd *metalv1.Device) (Device, bool) {
			d := fromDevice(sd)
			return *d, matchesDevice(d, opts)
		})
}

// matchesDevice filters again on our side: adoption by tag must be exact,
// and whether the API's hostname filter matches substrings is not known
// (inferred).
func matchesDevice(d *Device, opts ListDevicesOptions) bool {
	return (opts.Tag == "" || d.HasTag(opts.Tag)) &&
		(!opts.WithTerminationTime || !d.TerminationTime.IsZero()) &&
		(opts.Hostname == "" || d.Hostname == opts.Hostname) &&
		(opts.Metro == "" || d.Metro == "" || strings.EqualFold(d.Metro, opts.Metro))
}

func (c *sdkClient) UpdateDevice(ctx context.Context, id string, u DeviceUpdate) (*Device, error) {
	if err := requireID(OpUpdateDevice, "device ID", id); err != nil {
		return nil, err
	}
	in := updateInput(u)
	var d *metalv1.Device
	err := c.do(ctx, OpUpdateDevice, func(ctx context.Context) (resp *http.Response, err error) {
		d, resp, err = c.api.DevicesApi.UpdateDevice(ctx, id).DeviceUpdateInput(in).Include(deviceIncludes).Exclude(deviceExcludes).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return fromDevice(d), nil
}

func updateInput(u DeviceUpdate) metalv1.DeviceUpdateInput {
	in := metalv1.DeviceUpdateInput{
		Hostname:      u.Hostname,
		Description:   u.Description,
		BillingCycle:  u.BillingCycle,
		IpxeScriptUrl: u.IPXEScriptURL,
		AlwaysPxe:     u.AlwaysPXE,
		Locked:        u.Locked,
		NetworkFrozen: u.NetworkFrozen,
		SpotInstance:  u.SpotInstance,
		Customdata:    u.Customdata,
	}
	if u.Tags != nil {
		// An empty, non-nil slice still marshals, so tags can be cleared.
		in.Tags = append([]string{}, (*u.Tags)...)
	}
	if u.Userdata != nil {
		in.Userdata = metalv1.PtrString(string(*u.Userdata))
	}
	return in
}

func (c *sdkClient) DeleteDevice(ctx context.Context, id string, force bool) error {
	if err := requireID(OpDeleteDevice, "device ID", id); err != nil {
		return err
	}
	return c.do(ctx, OpDeleteDevice, func(ctx context.Context) (*http.Response, error) {
		r := c.api.DevicesApi.DeleteDevice(ctx, id)
		if force {
			r = r.ForceDelete(true)
		}
		return r.Execute()
	})
}

func (c *sdkClient) Reinstall(ctx context.Context, id string, req ReinstallRequest) error {
	in := metalv1.DeviceActionInput{
		Type:            metalv1.DEVICEACTIONINPUTTYPE_REINSTALL,
		OperatingSystem: optString(req.OperatingSystem),
		IpxeScriptUrl:   optString(req.IPXEScriptURL),
		PreserveData:    metalv1.PtrBool(req.PreserveData),
		DeprovisionFast: metalv1.PtrBool(req.DeprovisionFast),
	}
	return c.action(ctx, OpReinstall, id, in)
}

func (c *sdkClient) PowerOn(ctx context.Context, id string) error {
	return c.action(ctx, OpPowerOn, id, metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_ON})
}

func (c *sdkClient) PowerOff(ctx context.Context, id string) error {
	return c.action(ctx, OpPowerOff, id, metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF})
}

func (c *sdkClient) Reboot(ctx context.Context, id string) error {
	return c.action(ctx, OpReboot, id, metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_REBOOT})
}

func (c *sdkClient) action(ctx context.Context, op, id string, in metalv1.DeviceActionInput) error {
	if err := requireID(op, "device ID", id); err != nil {
		return err
	}
	return c.do(ctx, op, func(ctx context.Context) (*http.Response, error) {
		return c.api.DevicesApi.PerformAction(ctx, id).DeviceActionInput(in).Execute()
	})
}
