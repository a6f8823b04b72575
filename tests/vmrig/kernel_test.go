package vmrig

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The header is what a boot loader checks before it loads a bzImage: the
// boot flag, the "HdrS" signature of protocol 2.00 and later, a loaded-high
// kernel, room for an initrd and a command line; the entry jumps past it.
func TestHaltingKernelHeader(t *testing.T) {
	k := HaltingKernel(0)
	le := binary.LittleEndian
	assert.Len(t, k, 1<<20, "at least 1 MiB: smaller images are taken for PXE programs")
	assert.Equal(t, uint16(0xaa55), le.Uint16(k[0x1fe:]))
	assert.Equal(t, "HdrS", string(k[0x202:0x206]))
	assert.Equal(t, uint16(0x020c), le.Uint16(k[0x206:]))
	assert.Equal(t, byte(1), k[0x211]&1)
	assert.NotZero(t, le.Uint32(k[0x22c:]), "initrd_addr_max")
	assert.Equal(t, 0x280, 0x202+int(k[0x201]), "the entry jumps to the code")
	assert.Len(t, HaltingKernel(3<<20), 3<<20)
}

func TestKernelCommandLine(t *testing.T) {
	serial := "SeaBIOS\r\nvmrig-kernel cmdline=[first]\r\niPXE ...\r\nvmrig-kernel cmdline=[initrd=x ip=dhcp a=\"b:c\"]\r\n"
	got, ok := KernelCommandLine(serial)
	assert.True(t, ok)
	assert.Equal(t, `initrd=x ip=dhcp a="b:c"`, got, "the last one")
	_, ok = KernelCommandLine("no kernel here")
	assert.False(t, ok)

	// Through OVMF's console: wrapped, with control sequences.
	serial = "\x1b[2J\x1b[01;01H\r\nvmrig-kernel cmdline=[vmlinuz initrd=initrd harvester.install.config_url=http://10.0.2.100/boot/n-1/con\r\nfig.yaml?mac=52:54:00:29:00:01 \x1b[0m\x1b[37m\x1b[40mconsole=tty1]\r\n"
	got, ok = KernelCommandLine(serial)
	assert.True(t, ok)
	assert.Equal(t, "vmlinuz initrd=initrd harvester.install.config_url=http://10.0.2.100/boot/n-1/config.yaml?mac=52:54:00:29:00:01 console=tty1", got)
}

// The same file is an EFI application: the "MZ" and PE32+ headers before
// the setup header, an EFI application's subsystem, and the code where the
// one section says.
func TestHaltingKernelIsAnEFIApplication(t *testing.T) {
	k := HaltingKernel(0)
	le := binary.LittleEndian
	assert.Equal(t, "MZ", string(k[:2]))
	pe := le.Uint32(k[0x3c:])
	assert.Equal(t, "PE\x00\x00", string(k[pe:pe+4]))
	assert.Equal(t, uint16(0x8664), le.Uint16(k[pe+4:]))
	opt := k[pe+24:]
	assert.Equal(t, uint16(0x20b), le.Uint16(opt), "PE32+")
	assert.Equal(t, uint16(10), le.Uint16(opt[0x44:]), "an EFI application")
	section := opt[le.Uint16(k[pe+20:]):]
	raw := le.Uint32(section[20:])
	assert.Less(t, int(pe)+24+int(le.Uint16(k[pe+20:]))+40, 0x1f1, "the PE headers end before the bzImage's setup header")
	assert.Equal(t, efiApplication, k[raw:raw+uint32(len(efiApplication))])
	assert.Equal(t, "HdrS", string(k[0x202:0x206]), "and it is still a bzImage")
}
