package metal

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/equinix/equinix-sdk-go/services/metalv1"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

func (c *sdkClient) ListHardwareReservations(ctx context.Context) ([]HardwareReservation, error) {
	return paginate(ctx, c, OpListHardwareReservations,
		func(ctx context.Context, page int32) ([]metalv1.HardwareReservation, *metalv1.Meta, *http.Response, error) {
			list, resp, err := c.api.HardwareReservationsApi.FindProjectHardwareReservations(ctx, c.projectID).
				Page(page).PerPage(perPage).Execute()
			if list == nil {
				return nil, nil, resp, err
			}
			return list.HardwareReservations, list.Meta, resp, err
		},
		func(r *metalv1.HardwareReservation) (HardwareReservation, bool) {
			return fromHardwareReservation(r), true
		})
}

func (c *sdkClient) GetHardwareReservation(ctx context.Context, id string) (*HardwareReservation, error) {
	if err := requireID(OpGetHardwareReservation, "hardware reservation ID", id); err != nil {
		return nil, err
	}
	var r *metalv1.HardwareReservation
	err := c.do(ctx, OpGetHardwareReservation, func(ctx context.Context) (resp *http.Response, err error) {
		r, resp, err = c.api.HardwareReservationsApi.FindHardwareReservationById(ctx, id).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := fromHardwareReservation(r)
	return &out, nil
}

func fromHardwareReservation(r *metalv1.HardwareReservation) HardwareReservation {
	out := HardwareReservation{
		ID:            idOf(r.Id, r.Href),
		ShortID:       r.GetShortId(),
		Provisionable: r.GetProvisionable(),
		Spare:         r.GetSpare(),
		NeedOfService: r.GetNeedOfService(),
		SwitchUUID:    r.GetSwitchUuid(),
		CreatedAt:     timeOf(r.CreatedAt),
	}
	if r.Plan != nil {
		out.Plan = r.Plan.GetSlug()
		if out.Plan != "" {
			p := fromPlan(r.Plan)
			out.PlanDetails = &p
		}
	}
	if f := r.Facility; f != nil {
		out.Facility = strings.ToLower(f.GetCode())
		if f.Metro != nil {
			out.Metro = strings.ToLower(f.Metro.GetCode())
		}
	}
	if r.Device != nil {
		out.DeviceID = idOf(r.Device.Id, r.Device.Href)
	}
	return out
}

// ListSpotPrices reads the per-metro report. Its model names a few metros
// and plans as fields and keeps the rest in AdditionalProperties; written
// back with the SDK's own MarshalJSON, both are one JSON object of
// metro -> plan -> {"price": ...}.
func (c *sdkClient) ListSpotPrices(ctx context.Context) ([]SpotPrice, error) {
	var list *metalv1.SpotMarketPricesPerMetroList
	err := c.do(ctx, OpListSpotPrices, func(ctx context.Context) (resp *http.Response, err error) {
		list, resp, err = c.api.SpotMarketApi.FindMetroSpotMarketPrices(ctx).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	if list.SpotMarketPrices == nil {
		return nil, nil
	}
	raw, err := json.Marshal(list.SpotMarketPrices)
	if err != nil {
		return nil, &failure.Error{Seam: Seam, Op: OpListSpotPrices, Class: failure.Unknown, Message: clean("reading the prices: " + err.Error()), Err: err}
	}
	var byMetro map[string]map[string]struct {
		Price *float64 `json:"price"`
	}
	if err := json.Unmarshal(raw, &byMetro); err != nil {
		return nil, &failure.Error{Seam: Seam, Op: OpListSpotPrices, Class: failure.Unknown, Message: clean("reading the prices: " + err.Error()), Err: err}
	}
	var out []SpotPrice
	for metro, plans := range byMetro {
		for plan, p := range plans {
			if p.Price != nil {
				out = append(out, SpotPrice{Metro: strings.ToLower(metro), Plan: plan, Price: *p.Price})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Metro != out[j].Metro {
			return out[i].Metro < out[j].Metro
		}
		return out[i].Plan < out[j].Plan
	})
	return out, nil
}
