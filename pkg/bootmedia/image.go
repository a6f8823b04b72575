package bootmedia

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// Paths inside the image. The EFI system partition is a FAT image that
// the El Torito catalog names for the EFI platform; firmware mounts it
// and runs the removable-media loader of its architecture, which iPXE
// then finds the script beside (it looks in its own directory first).
const (
	PathESP         = "/efiboot.img"
	PathScript      = "/autoexec.ipxe"
	PathBootCatalog = "/boot.cat"
	PathLegacy      = "/ipxe.lkrn"
	PathISOLINUX    = "/isolinux/isolinux.bin"
	PathISOLINUXCfg = "/isolinux/isolinux.cfg"
	PathLDLINUX     = "/isolinux/ldlinux.c32"
	espLoaderDir    = "/EFI/BOOT"
	espScript       = espLoaderDir + "/autoexec.ipxe"
	// VolumeID is the ISO's volume label, which a BMC's virtual media page
	// shows.
	VolumeID = "HARVESTER_BOOT"
)

// ESPLoaderPath is where firmware looks for the loader of arch on
// removable media.
func ESPLoaderPath(arch string) string {
	if arch == harvester.ArchARM64 {
		return espLoaderDir + "/BOOTAA64.EFI"
	}
	return espLoaderDir + "/BOOTX64.EFI"
}

// Image is a built image, a file in the directory Build was given.
type Image struct {
	// Path is the ISO file; serve it with http.ServeContent (BMCs read
	// virtual media in ranges) and Remove it when the claim ends.
	Path string
	// Size is its length in bytes.
	Size int64
	// SHA256 is its digest, hex: an ETag, or what a BMC may be told.
	SHA256 string
	// Script is the iPXE script it holds.
	Script string
}

// Remove deletes the image's file.
func (i *Image) Remove() error {
	if err := os.Remove(i.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove boot image: %w", err)
	}
	return nil
}

// Build writes s's image into a new file in dir: an ISO 9660 file system
// with El Torito boot entries, for UEFI an EFI system partition holding
// the loader of s.Arch and the script, for Legacy ISOLINUX loading iPXE's
// legacy build with the script (bmc.BootFirmwareAny on amd64: both, where
// the loaders are at hand). The image is staged in a temporary directory
// under dir, removed before Build returns: memory holds no image, so many
// may be built at once. A loader the Spec needs and l lacks is
// ErrNoLoader.
func Build(s Spec, l *Loaders, dir string) (*Image, error) {
	n, err := s.check()
	if err != nil {
		return nil, err
	}
	uefi, legacy, err := l.choose(n)
	if err != nil {
		return nil, err
	}
	ws, err := os.MkdirTemp(dir, "bootmedia-")
	if err != nil {
		return nil, fmt.Errorf("boot image workspace: %w", err)
	}
	defer os.RemoveAll(ws)
	script := n.script()
	tree := filepath.Join(ws, "tree")
	if err := os.Mkdir(tree, 0o700); err != nil {
		return nil, fmt.Errorf("boot image workspace: %w", err)
	}
	files := map[string][]byte{PathScript: []byte(script)}
	var catalog iso9660.ElTorito
	catalog.BootCatalog = PathBootCatalog
	if legacy != nil {
		files[PathLegacy] = legacy.ipxe
		files[PathISOLINUX] = legacy.isolinux
		files[PathLDLINUX] = legacy.ldlinux
		files[PathISOLINUXCfg] = []byte(isolinuxConfig)
		// ISOLINUX wants the boot information table (it finds the rest
		// of itself by it) and 4 sectors loaded, as mkisofs is told for it.
		e := &iso9660.ElToritoEntry{Platform: iso9660.BIOS, Emulation: iso9660.NoEmulation, BootFile: PathISOLINUX, BootTable: true}
		e.SetLoadSize(4)
		catalog.Entries = append(catalog.Entries, e)
	}
	if uefi != nil {
		if err := writeESP(filepath.Join(tree, PathESP), n.arch, uefi, script); err != nil {
			return nil, err
		}
		catalog.Entries = append(catalog.Entries, &iso9660.ElToritoEntry{Platform: iso9660.EFI, Emulation: iso9660.NoEmulation, BootFile: PathESP})
	}
	for p, b := range files {
		if err := writeTreeFile(tree, p, b); err != nil {
			return nil, err
		}
	}
	out, err := os.CreateTemp(dir, "claim-*.iso")
	if err != nil {
		return nil, fmt.Errorf("boot image: %w", err)
	}
	img := &Image{Path: out.Name(), Script: script}
	if err := finishISO(out, tree, &catalog); err != nil {
		_ = out.Close()
		_ = img.Remove()
		return nil, err
	}
	if img.Size, img.SHA256, err = digest(out); err != nil {
		_ = img.Remove()
		return nil, err
	}
	return img, nil
}

// isolinuxConfig boots iPXE's legacy build at once with the script as its
// initrd, which iPXE runs.
const isolinuxConfig = "DEFAULT ipxe\nPROMPT 0\nTIMEOUT 0\nLABEL ipxe\n  KERNEL " + PathLegacy + "\n  INITRD " + PathScript + "\n"

// choose picks the loaders the image carries.
func (l *Loaders) choose(n normalized) (uefi []byte, legacy *legacyLoader, err error) {
	if l == nil {
		return nil, nil, fmt.Errorf("%w: no loaders were read", ErrNoLoader)
	}
	if n.firmware != bmc.BootFirmwareLegacy {
		uefi = l.efi[n.arch]
	}
	if n.firmware != bmc.BootFirmwareUEFI && n.arch == harvester.ArchAMD64 {
		legacy = l.legacy
	}
	switch {
	case n.firmware == bmc.BootFirmwareUEFI && uefi == nil:
		return nil, nil, fmt.Errorf("%w: no UEFI loader for %s (%s)", ErrNoLoader, n.arch, map[string]string{harvester.ArchAMD64: FileEFIAMD64, harvester.ArchARM64: FileEFIARM64}[n.arch])
	case n.firmware == bmc.BootFirmwareLegacy && legacy == nil:
		return nil, nil, fmt.Errorf("%w: no legacy loader (%s, %s and %s)", ErrNoLoader, FileLegacy, FileISOLINUX, FileLDLINUX)
	case uefi == nil && legacy == nil:
		return nil, nil, fmt.Errorf("%w: none for %s", ErrNoLoader, n.arch)
	}
	return uefi, legacy, nil
}

// writeESP writes the EFI system partition: a FAT12 file system (the
// smallest FAT that fits; FAT32 would need 32 MiB at the least) with the
// loader where removable media keep it and the script beside it.
func writeESP(path, arch string, loader []byte, script string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	defer f.Close()
	// Room for the two files, the FAT's own structures and cluster slack,
	// in whole 64 KiB.
	const unit = 64 << 10
	size := (int64(len(loader)+len(script))*11/10 + 2*unit + unit - 1) / unit * unit
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	fsys, err := fat12.Create(file.New(f, false), size, 0, 512, "EFIBOOT", true)
	if err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	if err := fsys.Mkdir(espLoaderDir); err != nil {
		return fmt.Errorf("EFI system partition: %w", err)
	}
	for p, b := range map[string][]byte{ESPLoaderPath(arch): loader, espScript: []byte(script)} {
		w, err := fsys.OpenFile(p, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return fmt.Errorf("EFI system partition: %s: %w", p, err)
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("EFI system partition: %s: %w", p, err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("EFI system partition: %s: %w", p, err)
		}
	}
	return nil
}

func writeTreeFile(tree, p string, b []byte) error {
	full := filepath.Join(tree, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return fmt.Errorf("boot image: %w", err)
	}
	if err := os.WriteFile(full, b, 0o600); err != nil {
		return fmt.Errorf("boot image: %w", err)
	}
	return nil
}

// finishISO writes the ISO 9660 file system of tree into out, with Rock
// Ridge names (the script's and the loader's are longer than 8.3).
func finishISO(out *os.File, tree string, catalog *iso9660.ElTorito) error {
	fsys, err := iso9660.Create(file.New(out, false), 0, 0, 2048, tree)
	if err != nil {
		return fmt.Errorf("boot image: %w", err)
	}
	opts := iso9660.FinalizeOptions{RockRidge: true, VolumeIdentifier: VolumeID}
	if len(catalog.Entries) > 0 {
		opts.ElTorito = catalog
	}
	if err := fsys.Finalize(opts); err != nil {
		return fmt.Errorf("boot image: %w", err)
	}
	return nil
}

// digest closes f after reading its size and SHA-256.
func digest(f *os.File) (int64, string, error) {
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, "", fmt.Errorf("boot image: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("boot image: %w", err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
