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
}
