package metalsim

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

var (
	// ErrInvalid is returned by Simulator methods given a malformed argument.
	ErrInvalid = errors.New("invalid argument")
	// ErrAddressInUse is returned by AddIPReservation for a block that
	// overlaps one the simulator already holds.
	ErrAddressInUse = errors.New("address already in use")
	// ErrWrongState is returned when an object is not in the state the call
	// needs, such as approving a reservation that is not pending.
	ErrWrongState = errors.New("wrong state")
)

// minReservationBits is the largest block the API reserved, a /24.
const minReservationBits = 24

// IPReservationSpec describes a reservation added by AddIPReservation.
type IPReservationSpec struct {
	// CIDR is the block, /24 to /32, such as "147.75.10.8/29"; a bare
	// address is a /32.
	// Any such IPv4 block is accepted, including private ranges, so a test
	// cluster's VIP (say 10.0.0.10) can be an Elastic IP of the project.
	CIDR string
	// Type is public_ipv4 (the default), global_ipv4, or private_ipv4 (a
	// private Elastic IP: its assignments are listed as private addresses).
	Type string
	// Metro is required for public_ipv4 and private_ipv4, and ignored for
	// global_ipv4.
	Metro   string
	Tags    []string
	Details string
}

// AddIPReservation gives the project a reservation of exactly spec.CIDR,
// in state created, as if support had granted a request for that block.
// The API has no such call: it is how a test or a development environment
// makes an address it already uses (a VIP) an Elastic IP of the project.
// Addresses the simulator hands out later never overlap it.
func (s *Simulator) AddIPReservation(projectID string, spec IPReservationSpec) (string, error) {
	prefix, err := parseAssignAddress(strings.TrimSpace(spec.CIDR))
	if err != nil || !prefix.Addr().Is4() || prefix != prefix.Masked() || prefix.Bits() < minReservationBits {
		return "", fmt.Errorf("%w: %q is not an aligned IPv4 block of /%d to /32", ErrInvalid, spec.CIDR, minReservationBits)
	}
	kind := metalv1.IPReservationType(spec.Type)
	if kind == "" {
		kind = metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4
	}
	var id string
	s.locked(func() {
		s.advanceLocked(s.clock.Now())
		p, ok := s.projects[projectID]
		if !ok {
			err = fmt.Errorf("project %s: %w", projectID, ErrNotFound)
			return
		}
		var m metroInfo
		switch kind {
		case metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4:
		case metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4, metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4:
			if m, ok = findMetro(spec.Metro); !ok {
				err = fmt.Errorf("%w: metro %q", ErrInvalid, spec.Metro)
				return
			}
		default:
			err = fmt.Errorf("%w: type %q, use public_ipv4, global_ipv4 or private_ipv4", ErrInvalid, spec.Type)
			return
		}
		if b := s.overlappingLocked(prefix); b != nil {
			err = fmt.Errorf("%s overlaps %s: %w", prefix, b.prefix, ErrAddressInUse)
			return
		}
		now := s.clock.Now()
		s.objSeq++
		b := &ipBlock{
			id: s.ids.uuid(), project: p, metro: m, kind: kind, prefix: prefix,
			tags: append([]string{}, spec.Tags...), details: spec.Details,
			state: "created", createdAt: now, seq: s.objSeq,
		}
		s.addBlockLocked(b)
		// Pool blocks never overlap each other (the allocator counts
		// up); only a given block can be in their way.
		s.given = append(s.given, b)
		s.routersChangedLocked()
		id = b.id
	})
	return id, err
}

// ApproveIPReservation grants a pending reservation (state created), as
// Equinix support did for requests larger than the automatic limit.
func (s *Simulator) ApproveIPReservation(id string) error {
	return s.decideReservation(id, "created")
}

// DenyIPReservation refuses a pending reservation (state denied).
func (s *Simulator) DenyIPReservation(id string) error {
	return s.decideReservation(id, "denied")
}

func (s *Simulator) decideReservation(id, state string) error {
	var err error
	s.locked(func() {
		b, ok := s.blocks[id]
		switch {
		case !ok:
			err = fmt.Errorf("IP reservation %s: %w", id, ErrNotFound)
		case b.state != "pending":
			err = fmt.Errorf("IP reservation %s is %s, not pending: %w", id, b.state, ErrWrongState)
		default:
			b.state = state
			s.routersChangedLocked()
		}
	})
	return err
}

// freePrefixLocked draws blocks from gen until one overlaps no block added
// by AddIPReservation, so pool addresses never collide with given ones.
func (s *Simulator) freePrefixLocked(gen func() netip.Prefix) netip.Prefix {
	for {
		p := gen()
		if !slices.ContainsFunc(s.given, func(b *ipBlock) bool { return b.prefix.Overlaps(p) }) {
			return p
		}
	}
}

func (s *Simulator) overlappingLocked(p netip.Prefix) *ipBlock {
	for _, b := range s.blocks {
		if b.prefix.Overlaps(p) {
			return b
		}
	}
	return nil
}
