// Package metal is the seam between the controllers and the bare-metal API.
//
// Controllers depend only on the Client and Provider interfaces and on the
// provider-neutral types of this package; the Equinix Metal SDK
// (equinix-sdk-go services/metalv1) is imported by the SDK-backed implementation
// alone, so another provider can be added behind the same interfaces.
//
// Behaviour every implementation of Client keeps:
//
//   - Every failure is a *failure.Error of Seam carrying a class chosen from
//     the HTTP status code (failure.ClassOf and failure.RetryAfter; IsNotFound,
//     IsAuth, IsThrottled, IsTransient here).
//   - Answers that mean "already done" (converting a port to the layer it is
//     already in, unassigning a VLAN that is not assigned, creating a BGP session
//     that exists) are returned as success.
//   - Nothing is retried inside the client, and CreateDevice is never resent:
//     callers requeue through their workqueue and, for devices, adopt by tag on
//     the next pass.
//   - Lists return every page, read with per_page 100, except
//     ListProjectEvents, which reads newest-first pages only back to
//     ListEventsOptions.Since, so polling the event log costs what happened
//     since the last poll.
//
// Faking Client in controller unit tests: embed the interface in a struct and
// override only the methods the handler under test calls; calling any other
// method then panics on the nil embedded interface, which flags an unexpected
// API call:
//
//	type fakeMetal struct {
//		metal.Client
//		devices map[string]*metal.Device
//	}
//
//	func (f *fakeMetal) GetDevice(_ context.Context, id string) (*metal.Device, error) {
//		if d, ok := f.devices[id]; ok {
//			return d, nil
//		}
//		return nil, &failure.Error{Seam: metal.Seam, Op: "GetDevice", StatusCode: 404, Class: failure.NotFound}
//	}
//
// A Provider fake is a func adapter: ProviderFunc(func(metal.Credentials) (metal.Client, error)).
package metal
