package metalsim

import (
	"slices"
	"time"
	"unicode"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

const (
	// metalPeerAS is the AS of Equinix's BGP peers.
	metalPeerAS = 65530
	maxPrefix   = 10
)

var (
	peerIPv4 = []string{"169.254.255.1", "169.254.255.2"}
	peerIPv6 = []string{"fc00::e", "fc00::f"}
)

func (s *Simulator) requestBgpConfig(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	var in metalv1.BgpConfigRequestInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	if p.bgp != nil {
		return reply{}, errConflict("BGP is already enabled for this project")
	}
	if in.Asn < 1 || in.Asn > 4294967295 {
		return reply{}, errInvalid("asn must be between 1 and 4294967295")
	}
	// An empty password means none: the Equinix CCM sends "" unless one
	// is configured.
	md5 := in.GetMd5()
	if md5 != "" && !validMD5(md5) {
		return reply{}, errInvalid("md5 must be 10 to 20 letters and digits with at least one lower case letter, one upper case letter and one digit")
	}
	id := s.ids.uuid()
	cfg := &bgpConfig{md5: md5, obj: metalv1.BgpConfig{
		Id:             ptr(id),
		Href:           ptr(apiPrefix + "/bgp-configs/" + id),
		Asn:            ptr(in.Asn),
		DeploymentType: ptr(metalv1.BgpConfigDeploymentType(in.DeploymentType)),
		Status:         ptr(metalv1.BGPCONFIGSTATUS_REQUESTED),
		MaxPrefix:      ptr(int32(maxPrefix)),
		CreatedAt:      ptr(c.now),
		RequestedAt:    ptr(c.now),
		Project:        &metalv1.Href{Href: projectHref(p.id)},
	}}
	if md5 != "" {
		// The API returned the password with the config (the Equinix CCM
		// reads it back from there).
		cfg.obj.Md5 = *metalv1.NewNullableString(ptr(md5))
	}
	if in.UseCase != nil {
		cfg.obj.AdditionalProperties = map[string]interface{}{"use_case": in.GetUseCase()}
	}
	p.bgp = cfg
	if in.DeploymentType != metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_GLOBAL {
		// Global BGP needed a manual review and stays requested.
		s.scheduleLocked(c.now, s.timings.BGPEnable, func(time.Time) {
			if p.bgp == cfg {
				cfg.obj.Status = ptr(metalv1.BGPCONFIGSTATUS_ENABLED)
				s.routersChangedLocked()
			}
		})
	}
	// The spec documents 204 without a body; the SDK returns no object.
	return emptyReply(204)
}

func validMD5(s string) bool {
	if len(s) < 10 || len(s) > 20 {
		return false
	}
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case unicode.IsLower(r) && r < unicode.MaxASCII:
			lower = true
		case unicode.IsUpper(r) && r < unicode.MaxASCII:
			upper = true
		case unicode.IsDigit(r) && r < unicode.MaxASCII:
			digit = true
		default:
			return false
		}
	}
	return lower && upper && digit
}

// findBgpConfig always answers 200: without a config the body has no id,
// which is how clients learn that BGP is off.
func (s *Simulator) findBgpConfig(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	if p.bgp == nil {
		return jsonReply(200, metalv1.BgpConfig{})
	}
	cfg := p.bgp.obj
	cfg.Sessions = []metalv1.BgpSession{}
	for _, d := range s.projectDevicesLocked(p.id) {
		for _, bs := range d.sessions {
			cfg.Sessions = append(cfg.Sessions, s.renderSession(bs))
		}
	}
	return jsonReply(200, cfg)
}

func (s *Simulator) createBgpSession(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	var in metalv1.BGPSessionInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	family := metalv1.BGPSESSIONADDRESSFAMILY_IPV4
	if in.AddressFamily != nil {
		family = metalv1.BgpSessionAddressFamily(*in.AddressFamily)
	}
	switch {
	case d.project.bgp == nil || d.project.bgp.obj.GetStatus() == metalv1.BGPCONFIGSTATUS_DISABLED:
		return reply{}, errInvalid("BGP is not enabled for this project")
	case !hasManagementIPs(d):
		return reply{}, errInvalid("BGP sessions need a device with Layer 3 addresses")
	}
	for _, bs := range d.sessions {
		if bs.obj.AddressFamily == family {
			// Clients treat this message as success (CAPP, CPEM).
			return reply{}, errInvalid("Device " + d.id() + " already has session for address family " + string(family))
		}
	}
	id := s.ids.uuid()
	bs := &bgpSession{device: d, obj: metalv1.BgpSession{
		Id:            ptr(id),
		Href:          ptr(apiPrefix + "/bgp/sessions/" + id),
		AddressFamily: family,
		DefaultRoute:  ptr(in.GetDefaultRoute()),
		Device:        &metalv1.Href{Href: deviceHref(d.id())},
		Status:        ptr("unknown"),
		LearnedRoutes: []string{},
		CreatedAt:     ptr(c.now),
		UpdatedAt:     ptr(c.now),
	}}
	d.sessions = append(d.sessions, bs)
	s.sessions[id] = bs
	s.recordEventLocked(d, c.now, EventBGPSession, "success", "A BGP "+string(family)+" session was created for {{ device }}")
	s.routersChangedLocked()
	return jsonReply(201, s.renderSession(bs))
}

func (s *Simulator) findBgpSessions(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	list := metalv1.BgpSessionList{BgpSessions: []metalv1.BgpSession{}}
	for _, bs := range d.sessions {
		list.BgpSessions = append(list.BgpSessions, s.renderSession(bs))
	}
	return jsonReply(200, list)
}

func (c *call) sessionLocked() (*bgpSession, error) {
	bs, ok := c.s.sessions[c.pathValue("id")]
	if !ok {
		return nil, errNotFound()
	}
	if !c.projects[bs.device.project.id] {
		return nil, c.forbidden("You are not authorized to view this BGP session")
	}
	return bs, nil
}

func (s *Simulator) findBgpSessionByID(c *call) (reply, error) {
	bs, err := c.sessionLocked()
	if err != nil {
		return reply{}, err
	}
	return jsonReply(200, s.renderSession(bs))
}

// renderSession adds what the routers report: status and learned routes.
func (s *Simulator) renderSession(bs *bgpSession) metalv1.BgpSession {
	out := bs.obj
	status, routes := s.sessionStateLocked(bs)
	out.Status = ptr(status)
	out.LearnedRoutes = routes
	return out
}

func (s *Simulator) deleteBgpSession(c *call) (reply, error) {
	bs, err := c.sessionLocked()
	if err != nil {
		return reply{}, err
	}
	d := bs.device
	d.sessions = slices.DeleteFunc(d.sessions, func(x *bgpSession) bool { return x == bs })
	delete(s.sessions, bs.obj.GetId())
	s.routersChangedLocked()
	return emptyReply(204)
}
