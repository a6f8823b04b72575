package metalsim

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

var (
	hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?$`)
	uuidRE     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// deviceSpec is a validated create request.
type deviceSpec struct {
	plan        planInfo
	metro       metroInfo
	os          osInfo
	reservation *hwReservation
	ips         []ipWant
}

type ipWant struct {
	family int
	public bool
}

// defaultIPs is what a device gets without ip_addresses: one public IPv4,
// one private IPv4 and one public IPv6, in the order the API listed them.
var defaultIPs = []ipWant{{4, true}, {6, true}, {4, false}}

func (s *Simulator) createDevice(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	in, err := decodeCreateDevice(c)
	if err != nil {
		return reply{}, err
	}
	spec, err := s.validateCreateLocked(p, in, c.now)
	if err != nil {
		return reply{}, err
	}
	if in.GetSpotInstance() {
		if err := s.takeSpotLocked(spec.metro, spec.plan, float64(in.GetSpotPriceMax())); err != nil {
			return reply{}, err
		}
	}
	if f := s.createFaultLocked(FaultNoCapacity, spec.plan.slug, spec.metro.code); f != nil {
		s.releaseSpotPlaceLocked(in.GetSpotInstance(), spec)
		msg := f.Message
		if msg == "" {
			msg = "There aren't available servers in that metro"
		}
		return reply{}, errInvalid(msg)
	}
	d := s.newDeviceLocked(p, in, spec, c.now)
	if f := s.createFaultLocked(FaultProvisionFailure, spec.plan.slug, spec.metro.code); f != nil {
		d.failProvision = true
	}
	if in.GetSpotInstance() {
		if f := s.createFaultLocked(FaultSpotReclaim, spec.plan.slug, spec.metro.code); f != nil {
			d.reclaimLead = ptr(f.LeadTime)
		}
	}
	s.startProvisionLocked(d, c.now)
	if t := in.TerminationTime; t != nil {
		s.setTerminationLocked(d, *t, c.now)
	}
	return jsonReply(201, s.renderDevice(d, c.includes(), c.now))
}

func decodeCreateDevice(c *call) (metalv1.DeviceCreateInMetroInput, error) {
	var in metalv1.DeviceCreateInMetroInput
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.body, &raw); err != nil {
		return in, errInvalid("Invalid request body")
	}
	if _, ok := raw["metro"]; !ok {
		if _, ok := raw["facility"]; ok {
			// Facility provisioning was closed to new users in 2023.
			return in, errInvalid("Facility is no longer supported for provisioning, please use metro")
		}
	}
	if err := c.decode(&in); err != nil {
		return in, err
	}
	return in, nil
}

func (s *Simulator) validateCreateLocked(p *project, in metalv1.DeviceCreateInMetroInput, now time.Time) (deviceSpec, error) {
	var spec deviceSpec
	var errs []string
	var ok bool
	if spec.plan, ok = findPlan(in.Plan); !ok {
		errs = append(errs, fmt.Sprintf("Plan %s is not valid", in.Plan))
	}
	if spec.metro, ok = findMetro(in.Metro); !ok {
		errs = append(errs, fmt.Sprintf("Metro %s is not valid", in.Metro))
	}
	if spec.os, ok = findOS(in.OperatingSystem); !ok {
		errs = append(errs, fmt.Sprintf("Operating system %s is not valid", in.OperatingSystem))
	}
	if h := in.GetHostname(); in.Hostname != nil && !hostnameRE.MatchString(h) {
		errs = append(errs, fmt.Sprintf("Hostname is invalid, %s", h))
	}
	errs = append(errs, ipxeProblems(in.OperatingSystem, in.GetIpxeScriptUrl(), in.GetUserdata())...)
	if in.GetSpotInstance() && in.GetSpotPriceMax() <= 0 {
		errs = append(errs, "Spot price max must be greater than 0 for spot instances")
	}
	if t := in.TerminationTime; t != nil && !t.After(now) {
		errs = append(errs, "Termination time must be in the future")
	}
	for _, k := range in.ProjectSshKeys {
		if !uuidRE.MatchString(k) {
			errs = append(errs, fmt.Sprintf("Project SSH key %s is not a valid UUID", k))
		}
	}
	ips, ipErrs := requestedIPs(in.IpAddresses)
	spec.ips = ips
	errs = append(errs, ipErrs...)
	if len(errs) > 0 {
		return spec, errInvalid(errs...)
	}
	if id := in.GetHardwareReservationId(); id != "" {
		r, err := s.pickReservationLocked(p, id, spec.plan, spec.metro, now)
		if err != nil {
			return spec, err
		}
		spec.reservation = r
	}
	return spec, nil
}

// ipxeProblems enforces the custom iPXE rules of the API spec: custom_ipxe
// needs a script URL or #!ipxe userdata, not both, and a script URL is only
// valid with custom_ipxe.
func ipxeProblems(os, scriptURL, userdata string) []string {
	var errs []string
	ipxeUserdata := isIPXEScript(userdata)
	switch {
	case os == OSCustomIPXE && scriptURL == "" && !ipxeUserdata:
		errs = append(errs, "An ipxe_script_url or userdata starting with #!ipxe is required for the custom_ipxe operating system")
	case os == OSCustomIPXE && scriptURL != "" && ipxeUserdata:
		errs = append(errs, "Userdata must not be an iPXE script when ipxe_script_url is set")
	case os != OSCustomIPXE && scriptURL != "":
		errs = append(errs, "ipxe_script_url is only valid with the custom_ipxe operating system")
	}
	if scriptURL != "" {
		u, err := url.Parse(scriptURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, "ipxe_script_url must be an http or https URL")
		}
	}
	return errs
}

func isIPXEScript(userdata string) bool {
	return strings.HasPrefix(strings.TrimLeft(userdata, " \t\r\n"), "#!ipxe")
}

func requestedIPs(in []metalv1.IPAddress) ([]ipWant, []string) {
	if len(in) == 0 {
		return defaultIPs, nil
	}
	var out []ipWant
	private := false
	for _, a := range in {
		w := ipWant{family: int(a.GetAddressFamily()), public: a.GetPublic()}
		if w.family == 0 {
			w.family = 4
		}
		if w.family == 6 && !w.public {
			return nil, []string{"Private IPv6 addresses are not supported"}
		}
		private = private || (w.family == 4 && !w.public)
		out = append(out, w)
	}
	if !private {
		return nil, []string{"A private IPv4 address is required"}
	}
	return out, nil
}

func (s *Simulator) newDeviceLocked(p *project, in metalv1.DeviceCreateInMetroInput, spec deviceSpec, now time.Time) *device {
	id := s.ids.uuid()
	sid := shortID(id)
	hostname := in.GetHostname()
	if hostname == "" {
		hostname = strings.ReplaceAll(spec.plan.slug, ".", "-") + "-" + sid
	}
	billing := string(metalv1.DEVICECREATEINPUTBILLINGCYCLE_HOURLY)
	if in.BillingCycle != nil {
		billing = string(*in.BillingCycle)
	}
	fac := s.pickFacilityLocked(spec.metro)
	if spec.reservation != nil {
		fac = spec.reservation.facility
	}
	obj := metalv1.Device{
		Id: ptr(id), ShortId: ptr(sid), Href: ptr(deviceHref(id)),
		Hostname:      ptr(hostname),
		Description:   in.Description,
		Tags:          append([]string{}, in.Tags...),
		BillingCycle:  ptr(billing),
		AlwaysPxe:     ptr(in.GetAlwaysPxe()),
		IpxeScriptUrl: in.IpxeScriptUrl,
		Userdata:      ptr(in.GetUserdata()),
		Customdata:    copyMap(in.Customdata),
		Locked:        ptr(in.GetLocked()),
		NetworkFrozen: ptr(in.GetNetworkFrozen()),
		SpotInstance:  ptr(in.GetSpotInstance()),
		SpotPriceMax:  in.SpotPriceMax,
		CreatedAt:     ptr(now),
		UpdatedAt:     ptr(now),
		BondingMode:   ptr(int32(4)),
		SwitchUuid:    ptr(s.ids.hex(8)),
		Sos:           ptr(sid + "@sos." + fac.code + ".platformequinix.com"),
		Iqn:           ptr(fmt.Sprintf("iqn.%s.net.packet:device.%s", now.Format("2006-01"), sid)),
		User:          ptr("root"),
		SshKeys:       []metalv1.Href{},
		CreatedBy: &metalv1.DeviceCreatedBy{
			Id: p.userID, ShortId: shortID(p.userID), FullName: ptr("Simulator User"),
			Email: ptr("user@example.com"), Href: ptr(apiPrefix + "/users/" + p.userID),
		},
	}
	for _, k := range in.ProjectSshKeys {
		obj.SshKeys = append(obj.SshKeys, metalv1.Href{Href: apiPrefix + "/ssh-keys/" + k})
	}
	s.objSeq++
	d := &device{obj: obj, project: p, plan: spec.plan, metro: spec.metro, facility: fac, os: spec.os, seq: s.objSeq, reservation: spec.reservation}
	if d.reservation != nil {
		d.reservation.device = d
	}
	s.devices[id] = d
	p.indexDevice(d)
	s.newPortsLocked(d)
	for _, w := range spec.ips {
		s.addManagementIPLocked(d, w, now)
	}
	return d
}

func copyMap(m map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// pickFacilityLocked spreads a metro's devices over its facilities in turn.
func (s *Simulator) pickFacilityLocked(m metroInfo) facilityInfo {
	i := s.facilityNext[m.code]
	s.facilityNext[m.code] = (i + 1) % len(m.facilities)
	return m.facilities[i]
}
