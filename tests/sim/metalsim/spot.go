package metalsim

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// The spot market: a price per plan and metro and, optionally, a number of
// spot servers available there. Without SetSpotMarket a plan's spot price
// is 30% of its on-demand rate and capacity is unlimited (inferred).

// spotShare is the default spot price as a share of the on-demand rate.
const spotShare = 0.3

type spotKey struct{ metro, plan string }

type spotMarket struct {
	price float64
	// capacity is how many spot devices of the plan the metro holds; -1 is
	// no limit.
	capacity int
	used     int
}

// SpotMarket sets the spot market of one plan in one metro.
type SpotMarket struct {
	Metro string  `json:"metro"`
	Plan  string  `json:"plan"`
	Price float64 `json:"price"`
	// Capacity is how many spot devices of the plan the metro can hold at
	// once, across projects; negative means no limit. Nil leaves it as it
	// is.
	Capacity *int `json:"capacity,omitempty"`
}

// SetSpotMarket sets the spot price (and capacity) of a plan in a metro.
func (s *Simulator) SetSpotMarket(m SpotMarket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	metro, ok := findMetro(m.Metro)
	if !ok {
		return fmt.Errorf("metro %q: %w", m.Metro, ErrNotFound)
	}
	plan, ok := findPlan(m.Plan)
	if !ok {
		return fmt.Errorf("plan %q: %w", m.Plan, ErrNotFound)
	}
	if m.Price < 0 || math.IsNaN(m.Price) {
		return fmt.Errorf("spot price %v is negative", m.Price)
	}
	mk := s.spotLocked(metro, plan)
	mk.price = m.Price
	if m.Capacity != nil {
		mk.capacity = max(*m.Capacity, -1)
	}
	return nil
}

func (s *Simulator) spotLocked(metro metroInfo, plan planInfo) *spotMarket {
	k := spotKey{metro.code, plan.slug}
	mk := s.spot[k]
	if mk == nil {
		mk = &spotMarket{price: math.Round(plan.hourly*spotShare*100) / 100, capacity: -1}
		s.spot[k] = mk
	}
	return mk
}

// takeSpotLocked admits a spot create: the bid must reach the market price
// and the metro must hold another spot server of the plan. The messages
// are inferred.
func (s *Simulator) takeSpotLocked(metro metroInfo, plan planInfo, bid float64) error {
	mk := s.spotLocked(metro, plan)
	switch {
	// The bid travels as a float32: 0.7 arrives as 0.69999999.
	case bid < mk.price-1e-6:
		return errInvalid(fmt.Sprintf("Your spot_price_max of %.2f is below the current spot market price of %.2f for plan %s in metro %s",
			bid, mk.price, plan.slug, metro.code))
	case mk.capacity >= 0 && mk.used >= mk.capacity:
		return errInvalid(fmt.Sprintf("Spot market capacity for plan %s in metro %s is exhausted", plan.slug, metro.code))
	}
	mk.used++
	return nil
}

// releaseSpotPlaceLocked gives back the place a refused create took.
func (s *Simulator) releaseSpotPlaceLocked(spot bool, spec deviceSpec) {
	if mk := s.spot[spotKey{spec.metro.code, spec.plan.slug}]; spot && mk != nil && mk.used > 0 {
		mk.used--
	}
}

// releaseSpotLocked returns a spot device's place when it is gone.
func (s *Simulator) releaseSpotLocked(d *device) {
	if d.obj.GetSpotInstance() {
		if mk := s.spot[spotKey{d.metro.code, d.plan.slug}]; mk != nil && mk.used > 0 {
			mk.used--
		}
	}
}

// spotReport renders prices keyed by location code then plan slug into
// the SDK's report model, through its own UnmarshalJSON (the model names
// some locations and plans as fields and keeps the rest as additional
// properties).
func spotReport[T any](prices map[string]map[string]float64, out *T) error {
	doc := map[string]map[string]map[string]map[string]float64{"spot_market_prices": {}}
	for loc, plans := range prices {
		doc["spot_market_prices"][loc] = map[string]map[string]float64{}
		for plan, price := range plans {
			doc["spot_market_prices"][loc][plan] = map[string]float64{"price": price}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("marshal spot prices: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("spot prices into %T: %w", out, err)
	}
	return nil
}

// findMetroSpotMarketPrices answers GET /market/spot/prices/metros with
// the optional metro and plan filters.
func (s *Simulator) findMetroSpotMarketPrices(c *call) (reply, error) {
	metroQ, planQ := c.query("metro"), c.query("plan")
	prices := map[string]map[string]float64{}
	for _, m := range catalogMetros {
		if metroQ != "" && metroQ != m.code && metroQ != m.id {
			continue
		}
		for _, p := range catalogPlans {
			if planQ != "" && planQ != p.slug && planQ != p.id {
				continue
			}
			if prices[m.code] == nil {
				prices[m.code] = map[string]float64{}
			}
			prices[m.code][p.slug] = s.spotLocked(m, p).price
		}
	}
	var list metalv1.SpotMarketPricesPerMetroList
	if err := spotReport(prices, &list); err != nil {
		return reply{}, err
	}
	return jsonReply(200, list)
}
