package bmcdriver

import (
	"context"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// The boot of a server people own beyond a network boot: virtual media
// and UEFI HTTP boot, on the pass's one session, so that the BMC keeps
// one session whichever chain asks. They pass through to the session's
// client when it is a bmc.MediaClient (Redfish); on any other (IPMI) they
// are Unsupported. Their errors are the chain's (machine.Seam) wrapping
// the BMC's: BMCClass tells the BMC's own class, which separates media
// someone else inserted (Busy) from a BMC that could not be reached.

// BootOffer is what a BMC offers to boot its server with.
type BootOffer struct {
	// Protocol is the protocol of the session: IPMI offers a network boot
	// only.
	Protocol bmc.Protocol
	// Capabilities are what a Redfish BMC reports; for IPMI, PXE only.
	Capabilities bmc.Capabilities
}

// BootOffer reads what the BMC can boot the server with (a read: nothing
// changes).
func (m *Machine) BootOffer(ctx context.Context) (BootOffer, error) {
	c, err := m.session(ctx)
	if err != nil {
		return BootOffer{}, fromError("BootOffer", err, false)
	}
	m.mu.Lock()
	offer := BootOffer{Protocol: m.ep.Protocol}
	m.mu.Unlock()
	mc, ok := c.(bmc.MediaClient)
	if !ok {
		offer.Capabilities = bmc.Capabilities{PXE: true}
		return offer, nil
	}
	caps, err := mc.Capabilities(ctx)
	if err != nil {
		m.note(err)
		return BootOffer{}, fromError("BootOffer", err, false)
	}
	offer.Capabilities = caps
	return offer, nil
}

// mediaClient is the pass's session as a MediaClient.
func (m *Machine) mediaClient(ctx context.Context, op string) (bmc.MediaClient, error) {
	c, err := m.session(ctx)
	if err != nil {
		return nil, notSent(err)
	}
	mc, ok := c.(bmc.MediaClient)
	if !ok {
		return nil, fromError(op, &failure.Error{Seam: bmc.Seam, Op: op, Class: failure.Unsupported,
			Message: "the BMC speaks IPMI, which has neither virtual media nor UEFI HTTP boot"}, true)
	}
	return mc, nil
}

// InsertMedia mounts image in the BMC's virtual CD (one command). Media
// someone else inserted is left alone: BMCClass is Busy. A failed login
// sent nothing; a failure during the command may have let it run.
func (m *Machine) InsertMedia(ctx context.Context, image string) error {
	mc, err := m.mediaClient(ctx, "InsertMedia")
	if err != nil {
		return err
	}
	if err := mc.InsertMedia(ctx, image); err != nil {
		m.note(err)
		return fromError("InsertMedia", err, true)
	}
	return nil
}

// EjectMedia ejects the virtual CD's media only when it is image, and
// reports whether it ejected; another image, or none, is left as it is.
func (m *Machine) EjectMedia(ctx context.Context, image string) (bool, error) {
	mc, err := m.mediaClient(ctx, "EjectMedia")
	if err != nil {
		return false, err
	}
	ejected, err := mc.EjectMedia(ctx, image)
	if err != nil {
		m.note(err)
		return false, fromError("EjectMedia", err, true)
	}
	return ejected, nil
}

// BootOnce asks the BMC to boot the host from dev at its next start only
// (one command), with firmware fw (bmc.BootFirmwareAny: the server's own,
// where its BMC says it). It returns the firmware the BMC was told, also
// when the answer was lost. A failed login sent nothing; a failure during
// the command may have let it run.
func (m *Machine) BootOnce(ctx context.Context, dev bmc.BootDevice, fw bmc.BootFirmware) (bmc.BootFirmware, error) {
	c, err := m.session(ctx)
	if err != nil {
		return bmc.BootFirmwareAny, notSent(err)
	}
	used, err := c.BootOnce(ctx, dev, fw)
	if err != nil {
		m.note(err)
		return used, fromError("BootOnce", err, true)
	}
	return used, nil
}

// BootOnceHTTP asks the BMC to boot the host once from uri with its UEFI
// HTTP boot client (one command).
func (m *Machine) BootOnceHTTP(ctx context.Context, uri string) error {
	mc, err := m.mediaClient(ctx, "BootOnceHTTP")
	if err != nil {
		return err
	}
	if err := mc.BootOnceHTTP(ctx, uri); err != nil {
		m.note(err)
		return fromError("BootOnceHTTP", err, true)
	}
	return nil
}

// BMCClass is the class the BMC itself gave a failure in err's chain
// (failure.Unknown when the BMC gave none): Busy is media someone else
// inserted, Unsupported a BMC that lacks what was asked.
func BMCClass(err error) failure.Class {
	if e := failure.From(err, bmc.Seam); e != nil {
		return e.Class
	}
	return failure.Unknown
}
