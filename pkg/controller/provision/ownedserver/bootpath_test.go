package ownedserver

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
)

func TestChooseBootPath(t *testing.T) {
	all := bmc.Capabilities{BootTargets: []string{"None", "Pxe", "Cd", "UefiHttp"}, PXE: true, VirtualMedia: true, UEFIHTTP: true}
	httpOnly := bmc.Capabilities{BootTargets: []string{"None", "Pxe", "UefiHttp"}, PXE: true, UEFIHTTP: true}
	pxeOnly := bmc.Capabilities{BootTargets: []string{"None", "Pxe", "Hdd"}, PXE: true}
	for _, tc := range []struct {
		name  string
		offer pathOffer
		want  string
		// unavailable: the pin cannot be met.
		unavailable bool
		// why holds these, in order.
		why []string
	}{
		{name: "virtual media first", offer: pathOffer{Caps: all}, want: equinixv1.BootPathVirtualMedia,
			why: []string{"VirtualMedia: its BMC mounts"}},
		{name: "UEFI HTTP without virtual media", offer: pathOffer{Caps: httpOnly}, want: equinixv1.BootPathUefiHTTP,
			why: []string{"UefiHttp:", "not VirtualMedia: its BMC offers no virtual CD", "None, Pxe, UefiHttp"}},
		{name: "PXE on a BMC with neither", offer: pathOffer{Caps: pxeOnly}, want: equinixv1.BootPathPXE,
			why: []string{"PXE:", "not VirtualMedia", "not UefiHttp: its BMC offers no one-time UefiHttp"}},
		{name: "an IPMI BMC boots PXE", offer: pathOffer{IPMI: true, Caps: bmc.Capabilities{PXE: true}}, want: equinixv1.BootPathPXE,
			why: []string{"IPMI, which has no virtual media", "IPMI, which has no UEFI HTTP boot"}},
		{name: "no loaders: PXE, saying so", offer: pathOffer{Caps: all, NoImages: "no boot loaders in \"/x\" (--boot-loaders-dir)"},
			want: equinixv1.BootPathPXE, why: []string{"not VirtualMedia: no boot loaders in \"/x\" (--boot-loaders-dir)", "not UefiHttp: no boot loaders"}},
		{name: "no URL of the endpoint: PXE, saying so", offer: pathOffer{Caps: all, NoBaseURL: "set ipxe.publicURL"},
			want: equinixv1.BootPathPXE, why: []string{"not VirtualMedia: set ipxe.publicURL"}},
		{name: "legacy firmware has no HTTP boot", offer: pathOffer{Caps: httpOnly, Legacy: true}, want: equinixv1.BootPathPXE,
			why: []string{"boots Legacy (BIOS)"}},
		{name: "someone else's media: the next path", offer: pathOffer{Caps: all,
			Refused: map[string]string{equinixv1.BootPathVirtualMedia: "the BMC's virtual CD holds media the addon did not insert"}},
			want: equinixv1.BootPathUefiHTTP, why: []string{"not VirtualMedia: the BMC's virtual CD holds media the addon did not insert"}},
		{name: "both refused", offer: pathOffer{Caps: all, Refused: map[string]string{
			equinixv1.BootPathVirtualMedia: "busy", equinixv1.BootPathUefiHTTP: "refused"}}, want: equinixv1.BootPathPXE},
		{name: "pinned PXE on a BMC with virtual media", offer: pathOffer{Caps: all, Pin: equinixv1.BootPathPXE},
			want: equinixv1.BootPathPXE, why: []string{"as spec.servers.bootPath pins it"}},
		{name: "pinned UEFI HTTP on a BMC with both", offer: pathOffer{Caps: all, Pin: equinixv1.BootPathUefiHTTP},
			want: equinixv1.BootPathUefiHTTP},
		{name: "pinned virtual media the BMC lacks", offer: pathOffer{Caps: pxeOnly, Pin: equinixv1.BootPathVirtualMedia},
			want: equinixv1.BootPathVirtualMedia, unavailable: true,
			why: []string{"spec.servers.bootPath pins VirtualMedia", "no virtual CD", "unset spec.servers.bootPath"}},
		{name: "pinned virtual media on an IPMI BMC", offer: pathOffer{IPMI: true, Pin: equinixv1.BootPathVirtualMedia},
			want: equinixv1.BootPathVirtualMedia, unavailable: true, why: []string{"IPMI"}},
		{name: "pinned virtual media with foreign media", offer: pathOffer{Caps: all, Pin: equinixv1.BootPathVirtualMedia,
			Refused: map[string]string{equinixv1.BootPathVirtualMedia: "someone else's media"}},
			want: equinixv1.BootPathVirtualMedia, unavailable: true, why: []string{"someone else's media"}},
		{name: "pinned UEFI HTTP without loaders", offer: pathOffer{Caps: all, Pin: equinixv1.BootPathUefiHTTP, NoImages: "no loaders"},
			want: equinixv1.BootPathUefiHTTP, unavailable: true, why: []string{"no loaders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := chooseBootPath(tc.offer)
			assert.Equal(t, tc.want, got.Path)
			assert.Equal(t, tc.unavailable, got.Unavailable)
			rest := got.Why
			for _, w := range tc.why {
				i := strings.Index(rest, w)
				if !assert.GreaterOrEqual(t, i, 0, "%q lacks %q (in order)", got.Why, w) {
					return
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
