package ownedserver

import (
	"fmt"
	"strings"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
)

// bootPaths are the ways into the installer, in the order they are
// tried: the first needs nothing on the server's network but a route to
// the boot endpoint, the last a DHCP server that hands iPXE the endpoint.
var bootPaths = []string{equinixv1.BootPathVirtualMedia, equinixv1.BootPathUefiHTTP, equinixv1.BootPathPXE}

// pathOffer is what a server's boot path is chosen from: what its BMC
// offers, what the controller side has, and the pool's pin.
type pathOffer struct {
	// IPMI: the BMC speaks IPMI, which offers a network boot only.
	IPMI bool
	// Caps are what a Redfish BMC says it can boot with.
	Caps bmc.Capabilities
	// NoImages says why the boot endpoint serves no boot image for this
	// server ("" when it does): the image is what virtual media mounts and
	// what UEFI HTTP boots.
	NoImages string
	// NoBaseURL says why there is no URL of the boot endpoint the BMC and
	// the server can reach ("" when there is).
	NoBaseURL string
	// Legacy: the server boots Legacy (BIOS), which has no HTTP boot.
	Legacy bool
	// Pin is the pool's spec.servers.bootPath, "" for none.
	Pin string
	// Refused are paths the BMC turned down after they were chosen (media
	// someone else inserted, a command it does not take), and why.
	Refused map[string]string
}

// pathChoice is the boot path chosen, and why; with Unavailable set, the
// pin cannot be met and nothing is booted.
type pathChoice struct {
	Path        string
	Why         string
	Unavailable bool
}

// chooseBootPath takes the pin when the server can be booted that way,
// and otherwise the first path it can, saying why each before it could
// not be taken. PXE is always possible: it is how servers booted before
// the other paths existed, and the BMC's own answer to the boot override
// says when it is not.
func chooseBootPath(o pathOffer) pathChoice {
	if o.Pin != "" {
		if lack := o.lacks(o.Pin); lack != "" {
			return pathChoice{Path: o.Pin, Unavailable: true, Why: fmt.Sprintf(
				"spec.servers.bootPath pins %s, which this server cannot boot with: %s; give it what it lacks, "+
					"or unset spec.servers.bootPath to boot it the first way it can", o.Pin, lack)}
		}
		return pathChoice{Path: o.Pin, Why: fmt.Sprintf("%s, as spec.servers.bootPath pins it", describePath(o.Pin))}
	}
	var skipped []string
	for _, p := range bootPaths {
		lack := o.lacks(p)
		if lack == "" {
			why := describePath(p)
			if len(skipped) > 0 {
				why += "; not " + strings.Join(skipped, "; not ")
			}
			return pathChoice{Path: p, Why: why}
		}
		skipped = append(skipped, fmt.Sprintf("%s: %s", p, lack))
	}
	// Unreachable: PXE lacks nothing.
	return pathChoice{Path: equinixv1.BootPathPXE, Why: describePath(equinixv1.BootPathPXE)}
}

// lacks says what keeps the server from booting by path, "" for nothing.
func (o pathOffer) lacks(path string) string {
	if why, ok := o.Refused[path]; ok {
		return why
	}
	switch path {
	case equinixv1.BootPathVirtualMedia:
		switch {
		case o.IPMI:
			return "its BMC speaks IPMI, which has no virtual media"
		case !o.Caps.VirtualMedia:
			return fmt.Sprintf("its BMC offers no virtual CD with a one-time boot from Cd (boot targets allowed: %s)", targets(o.Caps))
		}
		return o.endpointLacks()
	case equinixv1.BootPathUefiHTTP:
		switch {
		case o.IPMI:
			return "its BMC speaks IPMI, which has no UEFI HTTP boot"
		case !o.Caps.UEFIHTTP:
			return fmt.Sprintf("its BMC offers no one-time UefiHttp boot with an HttpBootUri (boot targets allowed: %s)", targets(o.Caps))
		case o.Legacy:
			return "the server boots Legacy (BIOS), and HTTP boot is UEFI's"
		}
		return o.endpointLacks()
	case equinixv1.BootPathPXE:
		return ""
	}
	return fmt.Sprintf("%q is no boot path", path)
}

// endpointLacks says what the controller side misses to hand the server
// its boot image.
func (o pathOffer) endpointLacks() string {
	switch {
	case o.NoImages != "":
		return o.NoImages
	case o.NoBaseURL != "":
		return o.NoBaseURL
	}
	return ""
}

func targets(c bmc.Capabilities) string {
	if len(c.BootTargets) == 0 {
		return "none listed"
	}
	return strings.Join(c.BootTargets, ", ")
}

// describePath says what a path does, for the Event and the condition.
func describePath(path string) string {
	switch path {
	case equinixv1.BootPathVirtualMedia:
		return "VirtualMedia: its BMC mounts the claim's boot image from the boot endpoint in its virtual CD and boots it once"
	case equinixv1.BootPathUefiHTTP:
		return "UefiHttp: its BMC has the UEFI firmware boot the claim's boot image from the boot endpoint by HTTP once"
	}
	return "PXE: it boots once from the network, where DHCP hands iPXE the boot endpoint"
}
