package ownedserver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

// bootImages is what the controller side needs to give a server a boot
// image: the loaders the boot endpoint builds images with (it serves
// none without them) and the endpoint's key, from which an image's URL
// takes the claim's nonce.
type bootImages struct {
	loaders *bootmedia.Loaders
	// missing says why there are no loaders.
	missing string

	secrets   bootendpoint.SecretClient
	namespace string
	mu        sync.Mutex
	key       []byte
}

// newBootImages reads the loaders of dir, as the boot endpoint does when
// it starts (the same folder, so both agree on whether images are
// served).
func newBootImages(dir string, secrets bootendpoint.SecretClient, namespace string) *bootImages {
	b := &bootImages{secrets: secrets, namespace: namespace}
	l, err := bootendpoint.LoadBootMedia(dir)
	switch {
	case errors.Is(err, bootendpoint.ErrNoBootMedia):
		b.missing = fmt.Sprintf("the boot endpoint serves no boot images: there are no boot loaders in %q "+
			"(--boot-loaders-dir; the addon's image ships them in /usr/share/harvester-equinix-addon/boot-loaders)", dir)
	case err != nil:
		b.missing = fmt.Sprintf("the boot endpoint serves no boot images: its boot loaders cannot be read: %v", err)
	default:
		b.loaders = l
	}
	return b
}

// noImages says why no image can be built for a server of arch booting
// with fw, "" when one can.
func (b *bootImages) noImages(arch string, fw bmc.BootFirmware) string {
	if b.loaders == nil {
		return b.missing
	}
	if !b.loaders.Supports(arch, fw) {
		return fmt.Sprintf("the boot endpoint's boot loaders have none for an %s server booting %s", archName(arch), firmwareName(fw))
	}
	return ""
}

// keyOf is the boot endpoint's key, read once: the endpoint reads it
// once too, as it starts.
func (b *bootImages) keyOf(ctx context.Context) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.key != nil {
		return b.key, nil
	}
	key, err := bootendpoint.Key(ctx, b.secrets, b.namespace)
	if err != nil {
		return nil, err
	}
	b.key = key
	return key, nil
}

func archName(arch string) string {
	if arch == "" {
		return "amd64"
	}
	return arch
}

func firmwareName(fw bmc.BootFirmware) string {
	if fw == bmc.BootFirmwareAny {
		return "UEFI or Legacy"
	}
	return string(fw)
}

// baseURL is the boot endpoint's URL as servers reach it, or why there
// is none.
func (r *run) baseURL() (string, string, error) {
	base, err := r.p.joinInfo.IPXEBaseURL()
	if e, ok := joininfo.AsError(err); ok {
		return "", "no URL of the boot endpoint that the BMC can reach: " + e.Message, nil
	}
	return base, "", err
}

// imageURL is the URL of the claim's boot image under base: it carries
// the claim's nonce, so it is never stored, logged or told but to the BMC.
func (r *run) imageURL(base string) (string, error) {
	key, err := r.p.media.keyOf(r.p.ctx)
	if err != nil {
		return "", err
	}
	return base + bootendpoint.MediaPath(key, bootendpoint.Claim{ID: string(r.Obj.UID), MAC: r.Obj.Status.ManagementMAC}), nil
}

// mediaEjected reports whether the image the addon inserted in the
// server's virtual CD is out of it, ejecting it when it is still there;
// an Instance that inserted none has nothing to eject. Media someone
// else inserted since is left alone (EjectMedia names the addon's URL).
// A refusal is the condition condType's (BootMediaEjected after the
// join, Deleting at the release) and a Warning Event, and an error, so
// that the work queue asks again with backoff.
func (r *run) mediaEjected(inv *seederv1alpha1.Inventory, m *bmcdriver.Machine, condType string) (bool, error) {
	st := &r.Obj.Status
	if st.BootMediaInsertedAt == nil || st.BootMediaEjectedAt != nil {
		return true, nil
	}
	image, err := r.imageURL(st.BootMediaEndpoint)
	if err != nil {
		return false, err
	}
	ejected, err := m.EjectMedia(r.p.ctx, image)
	if err != nil {
		msg := fmt.Sprintf("the BMC of server %s refused to eject the boot image the addon inserted in its virtual CD: %v; "+
			"asked again with backoff. Ejecting it at the BMC by hand also ends this", inv.Name, err)
		status := metav1.ConditionFalse
		if condType == equinixv1.InstanceDeleting {
			status = metav1.ConditionTrue
			msg += " (the server is released once its virtual CD no longer holds the addon's image)"
		}
		if c := conditions.Get(r.Obj.Status.Conditions, condType); c == nil || c.Reason != equinixv1.ReasonBootMediaEjectFailed {
			r.Eventf(equinixv1.ReasonBootMediaEjectFailed, "%s", msg)
		}
		r.SetCondition(condType, status, equinixv1.ReasonBootMediaEjectFailed, msg)
		return false, fmt.Errorf("server %s, ejecting the boot image: %w", inv.Name, err)
	}
	st.BootMediaEjectedAt = r.NowTime()
	what := "ejected the boot image the addon inserted in the virtual CD of server " + inv.Name
	if !ejected {
		what = "the virtual CD of server " + inv.Name + " no longer holds the boot image the addon inserted: nothing to eject"
	}
	r.Eventf(equinixv1.ReasonBootMediaEjected, "%s", what)
	if condType == equinixv1.InstanceBootMediaEjected {
		r.SetCondition(condType, metav1.ConditionTrue, equinixv1.ReasonBootMediaEjected, what)
	}
	return true, nil
}

// ejectMedia ejects the boot image the addon inserted, if any, from the
// virtual CD of the server: at the join (the installed system boots from
// its disk, and the image's URL died with the claim) and at the release
// of a server that was never powered on to boot it. condType is the
// condition that tells a refusal.
func (r *run) ejectMedia(inv *seederv1alpha1.Inventory, condType string) (bool, error) {
	st := &r.Obj.Status
	if st.BootMediaInsertedAt == nil || st.BootMediaEjectedAt != nil {
		return true, nil
	}
	m, ok, err := r.bmcMachine(inv, condType)
	if err != nil || !ok {
		return false, err
	}
	defer m.Release(r.After())
	return r.mediaEjected(inv, m, condType)
}

// takeImageSlot stores the intent that makes the server one of those
// booting from a boot image (set by intent), unless as many as the boot
// endpoint serves at once already are (imagesBusy). The count and the
// write are one step among this process's workers, and the count reads
// their writes before the cache shows them: twenty passes at once would
// otherwise all find the same place free.
func (r *run) takeImageSlot(inv *seederv1alpha1.Inventory, intent func(*equinixv1.InstanceStatus)) (bool, error) {
	r.p.imageSlots.Lock()
	defer r.p.imageSlots.Unlock()
	if r.imagesBusy(inv) {
		return false, nil
	}
	intent(&r.Obj.Status)
	return true, r.Persist()
}

// imagesBusy reports, and says in the Installing condition, that as many
// servers as the boot endpoint serves images to at once are booting from
// theirs (bootendpoint.MaxMediaBoots): a BMC told the URL of one more
// image now could be answered 503, which not every BMC asks again after.
// A requeue brings this one back to look again.
func (r *run) imagesBusy(inv *seederv1alpha1.Inventory) bool {
	booting := r.p.imageBoots(r.Obj.Name)
	if booting < bootendpoint.MaxMediaBoots {
		return false
	}
	r.Obj.Status.WaitingFor = "boot image"
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, equinixv1.ReasonBootImagesBusy, fmt.Sprintf(
		"server %s waits to boot by %s: %d servers are booting from their boot images, as many as the boot endpoint serves at once; "+
			"it is booted as soon as one of them has fetched its installer script", inv.Name, r.Obj.Status.BootPath, booting))
	r.Requeue(r.PollInterval())
	return true
}

// imageBoots counts the servers, but that of Instance self, that are
// booting from a boot image the endpoint serves: told to (the image
// inserted, or the HTTP boot set), their claim open, their installer
// script not fetched yet.
func (p *Provider) imageBoots(self string) int {
	insts, err := p.instances.List(labels.Everything())
	if err != nil {
		return 0
	}
	n := 0
	for _, inst := range insts {
		// The process's own writes count before the cache shows them.
		inst = p.instanceWrites.Latest(inst)
		st := inst.Status
		if inst.Name == self || !p.Handles(&inst.Spec.InstanceTemplate) || inst.DeletionTimestamp != nil ||
			st.JoinedAt != nil || st.BootScriptServedAt != nil {
			continue
		}
		if st.BootMediaInsertedAt != nil && st.BootMediaEjectedAt == nil ||
			st.BootPath == equinixv1.BootPathUefiHTTP && st.NetworkBootRequestedAt != nil {
			n++
		}
	}
	return n
}
