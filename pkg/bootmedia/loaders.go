package bootmedia

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// The loaders' file names in a loader directory: Debian's names for
// iPXE's EFI builds (package ipxe) and legacy build, and ISOLINUX's
// (packages isolinux and syslinux-common), which loads the legacy build
// from a CD.
const (
	FileEFIAMD64 = "ipxe-amd64.efi"
	FileEFIARM64 = "ipxe-arm64.efi"
	FileLegacy   = "ipxe.lkrn"
	FileISOLINUX = "isolinux.bin"
	FileLDLINUX  = "ldlinux.c32"
)

// ErrNoLoader says the loader directory lacks what an image needs; the
// caller may boot the server another way.
var ErrNoLoader = errors.New("no boot loader")

// Loaders are the boot loaders images carry, read once and shared by
// every image built from them.
type Loaders struct {
	efi    map[string][]byte // by arch
	legacy *legacyLoader
}

// legacyLoader is what a BIOS needs to run iPXE from a CD: ISOLINUX as the
// El Torito boot image, its library, and iPXE's Linux-kernel build, which
// runs the script ISOLINUX hands it as an initrd.
type legacyLoader struct {
	isolinux, ldlinux, ipxe []byte
}

// LoadLoaders reads the loaders in dir by their file names; a file that
// is absent leaves that loader out (LoadLoaders fails only when none is
// there, or one is unreadable or not what its name says).
func LoadLoaders(dir string) (*Loaders, error) {
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read boot loader: %w", err)
		}
		return b, nil
	}
	l := &Loaders{efi: map[string][]byte{}}
	for arch, name := range map[string]string{harvester.ArchAMD64: FileEFIAMD64, harvester.ArchARM64: FileEFIARM64} {
		b, err := read(name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		if err := checkEFI(b, arch); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, filepath.Join(dir, name), err)
		}
		l.efi[arch] = b
	}
	var legacy legacyLoader
	var missing []string
	for name, dst := range map[string]*[]byte{FileLegacy: &legacy.ipxe, FileISOLINUX: &legacy.isolinux, FileLDLINUX: &legacy.ldlinux} {
		b, err := read(name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			missing = append(missing, name)
		}
		*dst = b
	}
	if len(missing) == 0 {
		l.legacy = &legacy
	}
	if len(l.efi) == 0 && l.legacy == nil {
		return nil, fmt.Errorf("%w in %s: it holds none of %s, %s, or %s with %s and %s", ErrNoLoader, dir,
			FileEFIAMD64, FileEFIARM64, FileLegacy, FileISOLINUX, FileLDLINUX)
	}
	return l, nil
}

// Supports says whether an image for arch ("" is amd64) booting with fw
// can be built (bmc.BootFirmwareAny: with a UEFI or a legacy loader).
func (l *Loaders) Supports(arch string, fw bmc.BootFirmware) bool {
	arch, err := harvester.NormalizeArch(arch)
	if err != nil || l == nil {
		return false
	}
	uefi := l.efi[arch] != nil
	legacy := arch == harvester.ArchAMD64 && l.legacy != nil
	switch fw {
	case bmc.BootFirmwareUEFI:
		return uefi
	case bmc.BootFirmwareLegacy:
		return legacy
	}
	return uefi || legacy
}

// peMachine is the COFF machine type of each architecture's EFI binaries.
var peMachine = map[string]uint16{harvester.ArchAMD64: 0x8664, harvester.ArchARM64: 0xaa64}

// checkEFI makes sure b is an EFI application for arch: a PE32+ image of
// that machine type with the EFI application subsystem. A wrong file in
// the directory is refused when read, not at a server's console.
func checkEFI(b []byte, arch string) error {
	le := binary.LittleEndian
	if len(b) < 0x40 || string(b[:2]) != "MZ" {
		return errors.New("not a PE image (no MZ header)")
	}
	pe := int(le.Uint32(b[0x3c:]))
	if pe < 0 || pe+24+0x46 > len(b) || string(b[pe:pe+4]) != "PE\x00\x00" {
		return errors.New("not a PE image (no PE header)")
	}
	if m := le.Uint16(b[pe+4:]); m != peMachine[arch] {
		return fmt.Errorf("built for machine 0x%04x, not %s (0x%04x)", m, arch, peMachine[arch])
	}
	opt := b[pe+24:]
	if magic := le.Uint16(opt); magic != 0x20b {
		return fmt.Errorf("not PE32+ (magic 0x%03x)", magic)
	}
	if sub := le.Uint16(opt[0x44:]); sub != 10 {
		return fmt.Errorf("not an EFI application (subsystem %d)", sub)
	}
	return nil
}
