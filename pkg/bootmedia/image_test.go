package bootmedia

import (
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia/bootmediatest"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// loaderDir writes the named loaders into a new directory.
func loaderDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for n, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), b, 0o600))
	}
	return dir
}

func allLoaders() map[string][]byte {
	return map[string][]byte{
		FileEFIAMD64: bootmediatest.EFIApp(bootmediatest.MachineAMD64),
		FileEFIARM64: bootmediatest.EFIApp(bootmediatest.MachineARM64),
		FileLegacy:   []byte("ipxe legacy build"),
		// ISOLINUX gets its boot information table written at 8..64.
		FileISOLINUX: append([]byte("isolinux"), make([]byte, 2040)...),
		FileLDLINUX:  []byte("ldlinux"),
	}
}

// bootEntry is one El Torito catalog entry as firmware reads it.
type bootEntry struct {
	platform iso9660.Platform
	sectors  uint16 // 512-byte sectors loaded
	lba      uint32 // 2048-byte sector of the boot image
}

// readCatalog reads the El Torito boot record and catalog of the ISO at
// path by hand, as firmware does, rather than trusting the writer.
func readCatalog(t *testing.T, path string) []bootEntry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rec := make([]byte, 2048)
	_, err = f.ReadAt(rec, 17*2048)
	require.NoError(t, err)
	require.Equal(t, byte(0), rec[0], "boot record volume descriptor type")
	require.Equal(t, "CD001", string(rec[1:6]))
	require.Equal(t, "EL TORITO SPECIFICATION", strings.TrimRight(string(rec[7:39]), "\x00"))
	cat := make([]byte, 2048)
	_, err = f.ReadAt(cat, int64(binary.LittleEndian.Uint32(rec[0x47:]))*2048)
	require.NoError(t, err)
	require.Equal(t, byte(1), cat[0], "validation entry")
	require.Equal(t, []byte{0x55, 0xaa}, cat[0x1e:0x20])
	var sum uint16
	for i := 0; i < 32; i += 2 {
		sum += binary.LittleEndian.Uint16(cat[i:])
	}
	require.Zero(t, sum, "validation entry checksum")
	entry := func(platform byte, e []byte) bootEntry {
		require.Equal(t, byte(0x88), e[0], "bootable")
		require.Equal(t, byte(0), e[1], "no emulation")
		return bootEntry{platform: iso9660.Platform(platform), sectors: binary.LittleEndian.Uint16(e[6:]), lba: binary.LittleEndian.Uint32(e[8:])}
	}
	out := []bootEntry{entry(cat[1], cat[32:64])}
	for off := 64; off+64 <= len(cat) && (cat[off] == 0x90 || cat[off] == 0x91); off += 64 {
		out = append(out, entry(cat[off+1], cat[off+32:off+64]))
		if cat[off] == 0x91 {
			break
		}
	}
	return out
}

func openISO(t *testing.T, path string) *iso9660.FileSystem {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	st, err := f.Stat()
	require.NoError(t, err)
	fsys, err := iso9660.Read(file.New(f, true), st.Size(), 0, 2048)
	require.NoError(t, err)
	return fsys
}

// openESP reads the FAT image the EFI entry points at, from the ISO's
// own sectors: what firmware mounts.
func openESP(t *testing.T, path string, e bootEntry) *fat12.FileSystem {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	size := int64(e.sectors) * 512
	fsys, err := fat12.Read(file.New(f, true), size, int64(e.lba)*2048, 512)
	require.NoError(t, err)
	return fsys
}

func TestBuildUEFIImage(t *testing.T) {
	l, err := LoadLoaders(loaderDir(t, allLoaders()))
	require.NoError(t, err)
	dir := t.TempDir()
	spec := Spec{Firmware: bmc.BootFirmwareUEFI, MAC: "52:54:00:AB:CD:EF", ChainURL: "http://10.0.0.5:8080/claims/n0nce/boot.ipxe",
		Static: &StaticAddress{Address: netip.MustParsePrefix("10.0.0.21/24"), Gateway: netip.MustParseAddr("10.0.0.1"), DNS: netip.MustParseAddr("10.0.0.2")}}
	img, err := Build(spec, l, dir)
	require.NoError(t, err)

	st, err := os.Stat(img.Path)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), img.Size)
	assert.Len(t, img.SHA256, 64)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, left, 1, "the workspace is removed; only the image stays")

	iso := openISO(t, img.Path)
	assert.Equal(t, VolumeID, strings.TrimRight(iso.Label(), " \x00"))
	script, err := iso.ReadFile(fsPath(PathScript))
	require.NoError(t, err)
	assert.Equal(t, img.Script, string(script))
	_, err = iso.ReadFile(fsPath(PathLegacy))
	assert.Error(t, err, "a UEFI image carries no legacy loader")

	entries := readCatalog(t, img.Path)
	require.Len(t, entries, 1)
	require.Equal(t, iso9660.EFI, entries[0].platform)
	esp := openESP(t, img.Path, entries[0])
	loader, err := readFAT(esp, "EFI/BOOT/BOOTX64.EFI")
	require.NoError(t, err)
	assert.Equal(t, bootmediatest.EFIApp(bootmediatest.MachineAMD64), loader)
	espScript, err := readFAT(esp, "EFI/BOOT/autoexec.ipxe")
	require.NoError(t, err)
	assert.Equal(t, img.Script, string(espScript), "the script iPXE finds beside itself")
	for _, want := range []string{
		"set want 52:54:00:ab:cd:ef",
		"set ${nic}/ip 10.0.0.21", "set ${nic}/netmask 255.255.255.0",
		"set ${nic}/gateway 10.0.0.1", "set ${nic}/dns 10.0.0.2",
		"chain http://10.0.0.5:8080/claims/n0nce/boot.ipxe?mac=${${nic}/mac}&uuid=${uuid} ||",
	} {
		assert.Contains(t, img.Script, want)
	}
	assert.NotContains(t, img.Script, "dhcp", "a static address asks no DHCP")

	require.NoError(t, img.Remove())
	require.NoError(t, img.Remove(), "removing twice is fine")
	_, err = os.Stat(img.Path)
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestBuildHybridAndARMImages(t *testing.T) {
	l, err := LoadLoaders(loaderDir(t, allLoaders()))
	require.NoError(t, err)
	img, err := Build(Spec{Firmware: bmc.BootFirmwareAny, MAC: "52:54:00:00:00:01", ChainURL: "https://boot.example/c?claim=x"}, l, t.TempDir())
	require.NoError(t, err)
	entries := readCatalog(t, img.Path)
	require.Len(t, entries, 2, "BIOS first (the default entry), then EFI")
	assert.Equal(t, iso9660.BIOS, entries[0].platform)
	assert.Equal(t, uint16(4), entries[0].sectors, "ISOLINUX is loaded 4 sectors at a time")
	assert.Equal(t, iso9660.EFI, entries[1].platform)
	iso := openISO(t, img.Path)
	cfg, err := iso.ReadFile(fsPath(PathISOLINUXCfg))
	require.NoError(t, err)
	assert.Contains(t, string(cfg), "KERNEL "+PathLegacy)
	assert.Contains(t, string(cfg), "INITRD "+PathScript)
	for _, p := range []string{PathLegacy, PathLDLINUX, PathISOLINUX} {
		_, err := iso.ReadFile(fsPath(p))
		assert.NoError(t, err, p)
	}
	assert.Contains(t, img.Script, "dhcp ${nic} && goto up ||")
	assert.Contains(t, img.Script, "chain https://boot.example/c?claim=x&mac=${${nic}/mac}&uuid=${uuid} ||")

	arm, err := Build(Spec{Arch: harvester.ArchARM64, Firmware: bmc.BootFirmwareAny, MAC: "52:54:00:00:00:02", ChainURL: "http://h/x"}, l, t.TempDir())
	require.NoError(t, err)
	entries = readCatalog(t, arm.Path)
	require.Len(t, entries, 1, "arm64 boots UEFI only")
	loader, err := readFAT(openESP(t, arm.Path, entries[0]), "EFI/BOOT/BOOTAA64.EFI")
	require.NoError(t, err)
	assert.Equal(t, bootmediatest.EFIApp(bootmediatest.MachineARM64), loader)
}

func TestBuildRefusals(t *testing.T) {
	only := func(names ...string) *Loaders {
		all, files := allLoaders(), map[string][]byte{}
		for _, n := range names {
			files[n] = all[n]
		}
		l, err := LoadLoaders(loaderDir(t, files))
		require.NoError(t, err)
		return l
	}
	base := Spec{Firmware: bmc.BootFirmwareUEFI, MAC: "52:54:00:00:00:01", ChainURL: "http://h/x"}
	legacy := base
	legacy.Firmware = bmc.BootFirmwareLegacy
	_, err := Build(legacy, only(FileEFIAMD64), t.TempDir())
	assert.ErrorIs(t, err, ErrNoLoader)
	_, err = Build(base, only(FileLegacy, FileISOLINUX, FileLDLINUX), t.TempDir())
	assert.ErrorIs(t, err, ErrNoLoader)
	assert.True(t, only(FileEFIAMD64).Supports("", bmc.BootFirmwareUEFI))
	assert.False(t, only(FileEFIAMD64).Supports("arm64", bmc.BootFirmwareUEFI))
	assert.False(t, only(FileEFIAMD64).Supports("", bmc.BootFirmwareLegacy))
	assert.False(t, only(FileEFIAMD64, FileLegacy).Supports("", bmc.BootFirmwareLegacy), "ISOLINUX is needed too")

	_, err = LoadLoaders(t.TempDir())
	assert.ErrorIs(t, err, ErrNoLoader)
	_, err = LoadLoaders(loaderDir(t, map[string][]byte{FileEFIAMD64: bootmediatest.EFIApp(bootmediatest.MachineARM64)}))
	assert.ErrorIs(t, err, ErrInvalid, "an arm64 build under the amd64 name")
	_, err = LoadLoaders(loaderDir(t, map[string][]byte{FileEFIAMD64: []byte("#!/bin/sh\n")}))
	assert.ErrorIs(t, err, ErrInvalid)
}

// A failed build leaves nothing behind in the directory.
func TestBuildLeavesNothingOnFailure(t *testing.T) {
	l, err := LoadLoaders(loaderDir(t, allLoaders()))
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = Build(Spec{Firmware: bmc.BootFirmwareUEFI, MAC: "nope", ChainURL: "http://h/x"}, l, dir)
	require.ErrorIs(t, err, ErrInvalid)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// fsPath is an image path as io/fs names it.
func fsPath(p string) string { return strings.TrimPrefix(p, "/") }

// readFAT reads a file of the ESP to the length its directory entry
// says: go-diskfs's FAT reader hands back whole clusters.
func readFAT(esp *fat12.FileSystem, p string) ([]byte, error) {
	b, err := esp.ReadFile(p)
	if err != nil {
		return nil, err
	}
	info, err := fs.Stat(esp, p)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) < info.Size() {
		return nil, io.ErrUnexpectedEOF
	}
	return b[:info.Size()], nil
}
