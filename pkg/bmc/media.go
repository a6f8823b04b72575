package bmc

import (
	"context"
	"net/url"
	"strings"
)

// MediaClient is what a Redfish BMC can do beyond Client to boot a server
// with nothing set up on its network: mount a boot image (virtual media)
// and boot from it, or boot from an HTTP URL (UEFI HTTP boot). IPMI has
// neither; a Client from Dial implements it when the BMC speaks Redfish
// (type-assert), and Capabilities says what this BMC offers.
type MediaClient interface {
	// Capabilities reads what the BMC says it can boot the server with.
	Capabilities(ctx context.Context) (Capabilities, error)
	// Media reads what the CD/DVD slot holds. A BMC without one is
	// Unsupported.
	Media(ctx context.Context) (Media, error)
	// InsertMedia mounts image (an http or https URL of an ISO) in the
	// CD/DVD slot, write-protected. The same image already inserted is
	// done; another image inserted is Busy and left alone, for the addon
	// never ejects what it did not insert.
	InsertMedia(ctx context.Context, image string) error
	// EjectMedia ejects the CD/DVD slot's media only when it is image,
	// the URL the addon inserted; it reports whether it ejected. An empty
	// slot, or another image (someone else's), is left as it is:
	// (false, nil).
	EjectMedia(ctx context.Context, image string) (bool, error)
	// BootOnceHTTP makes the server boot, on its next start only, from
	// uri with its UEFI HTTP boot client (target UefiHttp, HttpBootUri).
	// UEFI only; a BMC that lacks either is Unsupported.
	BootOnceHTTP(ctx context.Context, uri string) error
}

// Capabilities is what a BMC says it can boot a server with, read from
// the system's Boot and the BMC's VirtualMedia collections.
type Capabilities struct {
	// BootTargets are the system's allowable BootSourceOverrideTarget
	// values as the BMC lists them; empty when it lists none (then any
	// target may or may not work: the boot call reads the answer back).
	BootTargets []string
	// PXE: a one-time network boot (target Pxe) is allowed.
	PXE bool
	// VirtualMedia: the BMC has a slot that takes a CD/DVD image and the
	// system allows a one-time boot from Cd. MediaSlot is the slot's
	// @odata.id.
	VirtualMedia bool
	MediaSlot    string
	// UEFIHTTP: the system allows target UefiHttp and has the
	// HttpBootUri property, so it can be told which URL to boot.
	UEFIHTTP bool
}

// Media is what a virtual media slot holds.
type Media struct {
	// Image is the URL the BMC reports; "" when nothing is mounted.
	Image    string
	Inserted bool
}

// sameImage says whether the BMC's Image is the URL given: equal once the
// scheme and host are lower case, as BMCs that rewrite the URL write it
// back. Nothing else is taken as the same image: an eject on a loose
// match could eject someone else's media.
func sameImage(reported, want string) bool {
	if reported == want {
		return true
	}
	r, err1 := url.Parse(reported)
	w, err2 := url.Parse(want)
	if err1 != nil || err2 != nil || reported == "" {
		return false
	}
	return strings.EqualFold(r.Scheme, w.Scheme) && strings.EqualFold(r.Host, w.Host) &&
		r.EscapedPath() == w.EscapedPath() && r.RawQuery == w.RawQuery
}
