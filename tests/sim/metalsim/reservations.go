package metalsim

import (
	"fmt"
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// HardwareReservation describes reserved servers to add to a project.
type HardwareReservation struct {
	Plan string `json:"plan"`
	// Metro places the servers; Facility (a facility of that metro, or
	// alone) pins them to one data centre, else they are spread over the
	// metro's.
	Metro    string `json:"metro,omitempty"`
	Facility string `json:"facility,omitempty"`
	// Spare reservations stand by for broken ones and cannot be
	// provisioned.
	Spare bool `json:"spare,omitempty"`
}

// AddHardwareReservation adds a provisionable hardware reservation of plan
// in metro to the project and returns its ID, for creates with
// hardware_reservation_id.
func (s *Simulator) AddHardwareReservation(projectID, planSlug, metroCode string) (string, error) {
	ids, err := s.AddHardwareReservations(projectID, HardwareReservation{Plan: planSlug, Metro: metroCode}, 1)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// AddHardwareReservations adds count reservations described by r to the
// project and returns their IDs.
func (s *Simulator) AddHardwareReservations(projectID string, r HardwareReservation, count int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.projects[projectID]
	if !ok {
		return nil, fmt.Errorf("project %s: %w", projectID, ErrNotFound)
	}
	plan, ok := findPlan(r.Plan)
	if !ok {
		return nil, fmt.Errorf("plan %q: %w", r.Plan, ErrNotFound)
	}
	var fac *facilityInfo
	if r.Facility != "" {
		f, ok := findFacility(r.Facility)
		if !ok || (r.Metro != "" && f.metro.code != r.Metro && f.metro.id != r.Metro) {
			return nil, fmt.Errorf("facility %q in metro %q: %w", r.Facility, r.Metro, ErrNotFound)
		}
		fac = &f
	}
	metro, ok := findMetro(r.Metro)
	switch {
	case fac != nil:
		metro = *fac.metro
	case !ok:
		return nil, fmt.Errorf("metro %q: %w", r.Metro, ErrNotFound)
	}
	now := s.clock.Now()
	var ids []string
	for range max(count, 1) {
		f := s.pickFacilityLocked(metro)
		if fac != nil {
			f = *fac
		}
		id := s.ids.uuid()
		s.objSeq++
		res := &hwReservation{
			id: id, shortID: shortID(id), project: p, plan: plan, metro: metro, facility: f,
			spare: r.Spare, switchUUID: s.ids.hex(8), provisionableAt: now, createdAt: now, seq: s.objSeq,
		}
		s.reservations[id] = res
		p.reservations.add(res)
		ids = append(ids, id)
	}
	return ids, nil
}

func (r *hwReservation) sequence() uint64 { return r.seq }

func (r *hwReservation) provisionable(now time.Time) bool {
	return r.device == nil && !r.spare && !now.Before(r.provisionableAt)
}

// pickReservationLocked resolves a create's hardware_reservation_id. The
// messages for an unknown ID and for next-available finding none are the
// API's (hashicorp/terraform #22857, crosscloudci #131); the others are
// inferred.
func (s *Simulator) pickReservationLocked(p *project, id string, plan planInfo, metro metroInfo, now time.Time) (*hwReservation, error) {
	if id == "next-available" {
		for _, r := range p.reservations.all() {
			if r.plan.slug == plan.slug && r.metro.code == metro.code && r.provisionable(now) {
				return r, nil
			}
		}
		return nil, errInvalid("There are no available hardware reservations for selected plan and facility")
	}
	r, ok := s.reservations[id]
	if !ok || r.project != p {
		return nil, errInvalid(fmt.Sprintf("%s is not a valid hardware reservation", id))
	}
	switch {
	case r.plan.slug != plan.slug:
		return nil, errInvalid(fmt.Sprintf("Hardware reservation %s is for plan %s, not %s", r.shortID, r.plan.slug, plan.slug))
	case r.metro.code != metro.code:
		return nil, errInvalid(fmt.Sprintf("Hardware reservation %s is in facility %s of metro %s, not in metro %s",
			r.shortID, r.facility.code, r.metro.code, metro.code))
	case r.spare:
		return nil, errInvalid(fmt.Sprintf("Hardware reservation %s is a spare and is not provisionable", r.shortID))
	case r.device != nil:
		return nil, errInvalid(fmt.Sprintf("Hardware reservation %s is not provisionable: it is in use by %s", r.shortID, r.device.hostname()))
	case now.Before(r.provisionableAt):
		// A reservation comes back some minutes after its device is gone.
		return nil, errInvalid(fmt.Sprintf("Hardware reservation %s is not provisionable yet, try again in a few minutes", r.shortID))
	}
	return r, nil
}

func (s *Simulator) renderHardwareReservation(r *hwReservation, in includes, now time.Time) metalv1.HardwareReservation {
	out := metalv1.HardwareReservation{
		Id:            ptr(r.id),
		ShortId:       ptr(r.shortID),
		Href:          ptr(hwReservationHref(r.id)),
		CreatedAt:     ptr(r.createdAt),
		Provisionable: ptr(r.provisionable(now)),
		Spare:         ptr(r.spare),
		NeedOfService: ptr(false),
		SwitchUuid:    ptr(r.switchUUID),
		CustomRate:    ptr(float32(r.plan.hourly)),
		Project:       &metalv1.Project{Href: ptr(projectHref(r.project.id))},
	}
	// Plan and facility in full, as on a device (inferred for
	// reservations); the rest are references unless included.
	if in.excluded("plan") {
		out.Plan = &metalv1.Plan{AdditionalProperties: hrefOnly(planHref(r.plan))}
	} else {
		out.Plan = ptr(r.plan.plan())
	}
	if in.excluded("facility") {
		out.Facility = &metalv1.Facility{AdditionalProperties: hrefOnly(facilityHref(r.facility))}
	} else {
		out.Facility = r.facility.facility()
	}
	if in.has("project") && !in.excluded("project") {
		out.Project = renderProject(r.project)
	}
	if d := r.device; d != nil {
		if in.has("device") && !in.excluded("device") {
			out.Device = ptr(s.renderDevice(d, includes{}, now))
		} else {
			out.Device = &metalv1.Device{Href: ptr(deviceHref(d.id()))}
		}
	}
	return out
}

func (s *Simulator) findHardwareReservation(c *call) (reply, error) {
	r, ok := s.reservations[c.pathValue("id")]
	if !ok {
		return reply{}, errNotFound()
	}
	if !c.projects[r.project.id] {
		return reply{}, c.forbidden("You are not authorized to view this hardware reservation")
	}
	return jsonReply(200, s.renderHardwareReservation(r, c.includes(), c.now))
}

// findProjectHardwareReservations lists in creation order with the SDK's
// filters: query (facility code, plan, project name, short ID or device
// hostname), state (active, spare, need_of_service) and provisionable=only.
func (s *Simulator) findProjectHardwareReservations(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	q := strings.ToLower(c.query("query"))
	state := c.query("state")
	onlyProvisionable := c.query("provisionable") == "only"
	var kept []*hwReservation
	for _, r := range p.reservations.all() {
		switch {
		case onlyProvisionable && !r.provisionable(c.now):
		case state == "active" && r.spare, state == "spare" && !r.spare, state == "need_of_service":
		case q != "" && !reservationMatches(r, q):
		default:
			kept = append(kept, r)
		}
	}
	pr := c.pagination()
	lo, hi := pr.bounds(len(kept))
	in := c.includes()
	list := metalv1.HardwareReservationList{HardwareReservations: []metalv1.HardwareReservation{}, Meta: c.meta(len(kept), pr)}
	for _, r := range kept[lo:hi] {
		list.HardwareReservations = append(list.HardwareReservations, s.renderHardwareReservation(r, in, c.now))
	}
	return jsonReply(200, list)
}

func reservationMatches(r *hwReservation, q string) bool {
	fields := []string{r.facility.code, r.plan.slug, r.plan.name, r.project.name, r.shortID}
	if r.device != nil {
		fields = append(fields, r.device.hostname())
	}
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), q) {
			return true
		}
	}
	return false
}
