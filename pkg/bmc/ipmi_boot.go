package bmc

import (
	"context"
	"fmt"

	ipmi "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// BootOnce sets the boot flags (Set System Boot Options parameter 5):
// valid, next boot only, device PXE, and the EFI bit for UEFI. It is the
// bare parameter, without the "set in progress" lock around it: BMCs that
// lack that lock (ipmi_sim among them) refuse the whole sequence, and one
// request has nothing to lock against. Retransmission is off, as for
// Power. Nothing is read back: BMCs differ in what parameter 5 reads once
// set (ipmi_sim reports the valid bit clear), so a check would refuse
// working BMCs.
func (c *ipmiClient) BootOnce(ctx context.Context, dev BootDevice, fw BootFirmware) (BootFirmware, error) {
	if err := checkBoot(c.ep, dev, fw); err != nil {
		return BootFirmwareAny, err
	}
	// The EFI bit is the only say the flags have: clear, the BMC boots the
	// host legacy.
	efi := fw == BootFirmwareUEFI
	sent := BootFirmwareLegacy
	if efi {
		sent = BootFirmwareUEFI
	}
	return sent, c.do(ctx, "BootOnce", func(cl *ipmi.Client) error {
		cl.WithTimeout(c.ep.timeout()).WithRetry(0)
		defer c.reads(cl)
		selector := types.BootDeviceSelectorForcePXE
		if dev == BootCD {
			selector = types.BootDeviceSelectorForceCDROM
		}
		err := cl.SetBootDevice(ctx, selector, types.BIOSBootType(efi), false)
		return c.bootRefused(err)
	})
}

// bootRefused reads the completion codes of Set System Boot Options. 81h
// (another client holds the "set in progress" lock) passes a moment later;
// every other refusal says this BMC does not take a boot device over IPMI.
func (c *ipmiClient) bootRefused(err error) error {
	respErr, ok := types.IsResponseError(err)
	if !ok {
		return err
	}
	code := respErr.CompletionCode()
	if code == 0x81 {
		return newError("BootOnce", c.ep, failure.Transient, "another client is changing the boot options (completion code 0x81); try again", err)
	}
	return newError("BootOnce", c.ep, failure.Unsupported, fmt.Sprintf(
		"the BMC refused the one-time network boot (Set System Boot Options, boot flags: completion code %#02x, %s); set the server to boot from the network in its firmware, or manage it over Redfish",
		uint8(code), code), err)
}
