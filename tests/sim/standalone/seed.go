package standalone

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// SeedFormat documents the seed file for the command's help.
const SeedFormat = `A seed file (YAML or JSON) names the projects, their tokens, their
hardware reservations and the spot market:

  projects:
    - id: 3a5e0c2c-4d1b-4c6e-9f0a-1b2c3d4e5f60
      tokens: [token-a, token-b]        # each may act on the project
      hardware_reservations:
        - plan: c3.small.x86
          metro: da                     # or facility: da11 (or both)
          count: 3                      # default 1
          spare: false                  # spares cannot be provisioned
  spot_market:
    - metro: da
      plan: c3.small.x86
      price: 0.25                       # US dollars per hour
      capacity: 10                      # spot devices at once; omit for no limit

Unknown fields are refused. Projects and reservations from flags are added
to the file's.`

// Seed is the content of a seed file.
type Seed struct {
	Projects   []SeedProject         `json:"projects"`
	SpotMarket []metalsim.SpotMarket `json:"spot_market,omitempty"`
}

// SeedProject is a project with the tokens that may use it and its
// hardware reservations.
type SeedProject struct {
	ID                   string        `json:"id"`
	Tokens               []string      `json:"tokens"`
	HardwareReservations []Reservation `json:"hardware_reservations,omitempty"`
}

// Reservation adds Count reserved servers to a project.
type Reservation struct {
	// ProjectID is set by flags and by Seed.AddTo; the file nests
	// reservations under their project instead.
	ProjectID string `json:"project_id,omitempty"`
	metalsim.HardwareReservation
	Count int `json:"count,omitempty"`
}

// ReadSeedFile reads and checks a seed file. Errors name the file and the
// entry, never a token.
func ReadSeedFile(path string) (Seed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Seed{}, fmt.Errorf("seed file: %w", err)
	}
	var s Seed
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return Seed{}, fmt.Errorf("seed file %s: %w", path, err)
	}
	if err := s.check(); err != nil {
		return Seed{}, fmt.Errorf("seed file %s: %w", path, err)
	}
	return s, nil
}

func (s Seed) check() error {
	if len(s.Projects) == 0 {
		return errors.New("no projects")
	}
	for i, p := range s.Projects {
		if strings.TrimSpace(p.ID) == "" {
			return fmt.Errorf("project %d has no id", i+1)
		}
		if len(p.Tokens) == 0 {
			return fmt.Errorf("project %s has no tokens", p.ID)
		}
		for j, t := range p.Tokens {
			if strings.TrimSpace(t) == "" {
				return fmt.Errorf("project %s: token %d is empty", p.ID, j+1)
			}
		}
		for j, r := range p.HardwareReservations {
			if r.ProjectID != "" && r.ProjectID != p.ID {
				return fmt.Errorf("project %s: hardware reservation %d names project %s", p.ID, j+1, r.ProjectID)
			}
		}
	}
	return nil
}

// AddTo adds the seed's projects, reservations and spot market to cfg.
func (s Seed) AddTo(cfg *Config) {
	for _, p := range s.Projects {
		for _, t := range p.Tokens {
			cfg.Projects = append(cfg.Projects, Project{Token: t, ID: p.ID})
		}
		for _, r := range p.HardwareReservations {
			r.ProjectID = p.ID
			cfg.Reservations = append(cfg.Reservations, r)
		}
	}
	cfg.SpotMarket = append(cfg.SpotMarket, s.SpotMarket...)
}

// ParseReservation reads a reservation flag:
// <project-id>:<plan>:<metro or facility>[:<count>].
func ParseReservation(v string) (Reservation, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 3 || len(parts) > 4 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Reservation{}, fmt.Errorf("%q: want <project-id>:<plan>:<metro or facility>[:<count>]", v)
	}
	r := Reservation{ProjectID: parts[0], HardwareReservation: metalsim.HardwareReservation{Plan: parts[1]}, Count: 1}
	if len(parts[2]) > 2 {
		r.Facility = parts[2] // metro codes have two letters, facilities more
	} else {
		r.Metro = parts[2]
	}
	if len(parts) == 4 {
		if _, err := fmt.Sscanf(parts[3], "%d", &r.Count); err != nil || r.Count < 1 {
			return Reservation{}, fmt.Errorf("%q: the count must be a positive number", v)
		}
	}
	return r, nil
}

// seed applies the configured reservations and spot market to sim.
func seed(sim *metalsim.Simulator, cfg Config) error {
	for i, r := range cfg.Reservations {
		if _, err := sim.AddHardwareReservations(r.ProjectID, r.HardwareReservation, max(r.Count, 1)); err != nil {
			return fmt.Errorf("hardware reservation %d: %w", i+1, err)
		}
	}
	for i, m := range cfg.SpotMarket {
		if err := sim.SetSpotMarket(m); err != nil {
			return fmt.Errorf("spot market %d: %w", i+1, err)
		}
	}
	return nil
}
