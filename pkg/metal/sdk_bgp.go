package metal

import (
	"context"
	"net/http"
	"path"

	"github.com/equinix/equinix-sdk-go/services/metalv1"

	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

func (c *sdkClient) GetBGPConfig(ctx context.Context) (*BGPConfig, error) {
	var cfg *metalv1.BgpConfig
	err := c.do(ctx, OpGetBGPConfig, func(ctx context.Context) (resp *http.Response, err error) {
		cfg, resp, err = c.api.BGPApi.FindBgpConfigByProject(ctx, c.projectID).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return fromBGPConfig(cfg), nil
}

func (c *sdkClient) CreateBGPConfig(ctx context.Context, req BGPConfigRequest) error {
	in := metalv1.BgpConfigRequestInput{
		Asn:            req.ASN,
		DeploymentType: metalv1.BgpConfigRequestInputDeploymentType(req.DeploymentType),
		Md5:            optString(string(req.MD5)),
		UseCase:        optString(req.UseCase),
	}
	if in.DeploymentType == "" {
		in.DeploymentType = metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL
	}
	err := c.do(ctx, OpCreateBGPConfig, func(ctx context.Context) (*http.Response, error) {
		return c.api.BGPApi.RequestBgpConfig(ctx, c.projectID).BgpConfigRequestInput(in).Execute()
	})
	if isAlreadyDone(err, alreadyEnabled...) {
		return nil
	}
	return err
}

// alreadyEnabled is the 422 for a project whose BGP is on (inferred).
var alreadyEnabled = [][]string{{"already enabled"}}

// alreadyHasSession is the 422 for a duplicate session (observed in
// cloud-provider-equinix-metal and cluster-api-provider-packet).
var alreadyHasSession = [][]string{{"already has session"}}

func (c *sdkClient) CreateBGPSession(ctx context.Context, deviceID string, req BGPSessionRequest) error {
	if err := requireID(OpCreateBGPSession, "device ID", deviceID); err != nil {
		return err
	}
	family := metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4
	if req.AddressFamily != "" {
		family = metalv1.BGPSessionInputAddressFamily(req.AddressFamily)
	}
	in := metalv1.BGPSessionInput{AddressFamily: &family, DefaultRoute: metalv1.PtrBool(req.DefaultRoute)}
	err := c.do(ctx, OpCreateBGPSession, func(ctx context.Context) (resp *http.Response, err error) {
		_, resp, err = c.api.DevicesApi.CreateBgpSession(ctx, deviceID).BGPSessionInput(in).Execute()
		return resp, err
	})
	if isAlreadyDone(err, alreadyHasSession...) {
		return nil
	}
	return err
}

func (c *sdkClient) ListBGPNeighbors(ctx context.Context, deviceID string) ([]BGPNeighbor, error) {
	if err := requireID(OpListBGPNeighbors, "device ID", deviceID); err != nil {
		return nil, err
	}
	var res *metalv1.BgpSessionNeighbors
	err := c.do(ctx, OpListBGPNeighbors, func(ctx context.Context) (resp *http.Response, err error) {
		res, resp, err = c.api.DevicesApi.GetBgpNeighborData(ctx, deviceID).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]BGPNeighbor, 0, len(res.GetBgpNeighbors()))
	for i := range res.GetBgpNeighbors() {
		out = append(out, fromBGPNeighbor(&res.BgpNeighbors[i]))
	}
	return out, nil
}

// ListBGPSessions lists a device's sessions (the API does not paginate them).
func (c *sdkClient) ListBGPSessions(ctx context.Context, deviceID string) ([]BGPSession, error) {
	if err := requireID(OpListBGPSessions, "device ID", deviceID); err != nil {
		return nil, err
	}
	var list *metalv1.BgpSessionList
	err := c.do(ctx, OpListBGPSessions, func(ctx context.Context) (resp *http.Response, err error) {
		list, resp, err = c.api.DevicesApi.FindBgpSessions(ctx, deviceID).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]BGPSession, 0, len(list.GetBgpSessions()))
	for i := range list.GetBgpSessions() {
		s := fromBGPSession(&list.BgpSessions[i])
		if s.DeviceID == "" {
			s.DeviceID = deviceID
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *sdkClient) GetBGPSession(ctx context.Context, id string) (*BGPSession, error) {
	if err := requireID(OpGetBGPSession, "BGP session ID", id); err != nil {
		return nil, err
	}
	var s *metalv1.BgpSession
	err := c.do(ctx, OpGetBGPSession, func(ctx context.Context) (resp *http.Response, err error) {
		s, resp, err = c.api.BGPApi.FindBgpSessionById(ctx, id).Execute()
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := fromBGPSession(s)
	return &out, nil
}

func (c *sdkClient) DeleteBGPSession(ctx context.Context, id string) error {
	if err := requireID(OpDeleteBGPSession, "BGP session ID", id); err != nil {
		return err
	}
	return c.do(ctx, OpDeleteBGPSession, func(ctx context.Context) (*http.Response, error) {
		return c.api.BGPApi.DeleteBgpSession(ctx, id).Execute()
	})
}

func fromBGPConfig(c *metalv1.BgpConfig) *BGPConfig {
	if c == nil {
		return &BGPConfig{}
	}
	return &BGPConfig{
		ID:             c.GetId(),
		ASN:            c.GetAsn(),
		DeploymentType: string(c.GetDeploymentType()),
		Status:         string(c.GetStatus()),
		MaxPrefix:      int(c.GetMaxPrefix()),
		MD5:            redact.Sensitive(c.GetMd5()),
	}
}

func fromBGPSession(s *metalv1.BgpSession) BGPSession {
	out := BGPSession{
		ID:            idOf(s.Id, s.Href),
		AddressFamily: string(s.GetAddressFamily()),
		Status:        s.GetStatus(),
		DefaultRoute:  s.GetDefaultRoute(),
		LearnedRoutes: append([]string(nil), s.LearnedRoutes...),
		CreatedAt:     timeOf(s.CreatedAt),
	}
	if s.Device != nil && s.Device.Href != "" {
		out.DeviceID = path.Base(s.Device.Href)
	}
	return out
}

func fromBGPNeighbor(n *metalv1.BgpNeighborData) BGPNeighbor {
	return BGPNeighbor{
		AddressFamily: int(n.GetAddressFamily()),
		CustomerAS:    int(n.GetCustomerAs()),
		CustomerIP:    n.GetCustomerIp(),
		PeerAS:        int(n.GetPeerAs()),
		PeerIPs:       append([]string(nil), n.PeerIps...),
		MD5Enabled:    n.GetMd5Enabled(),
		MD5Password:   redact.Sensitive(n.GetMd5Password()),
		Multihop:      n.GetMultihop(),
		RoutesIn:      fromBGPRoutes(n.RoutesIn),
		RoutesOut:     fromBGPRoutes(n.RoutesOut),
	}
}

func fromBGPRoutes(routes []metalv1.BgpRoute) []BGPRoute {
	var out []BGPRoute
	for _, r := range routes {
		out = append(out, BGPRoute{Route: r.GetRoute(), Exact: r.GetExact()})
	}
	return out
}
