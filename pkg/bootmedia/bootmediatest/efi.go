// Package bootmediatest makes boot loader files for tests: the smallest
// files package bootmedia's checks take, so that tests build boot images
// without Debian's binaries.
package bootmediatest

import "encoding/binary"

// Machine types of EFI applications, as the PE/COFF header names them.
const (
	MachineAMD64 uint16 = 0x8664
	MachineARM64 uint16 = 0xaa64
)

// EFIApp is the smallest file bootmedia takes for an EFI application of
// machine m: a PE32+ header with the EFI application subsystem, padded so
// that an EFI system partition has something to hold.
func EFIApp(m uint16) []byte {
	b := make([]byte, 8192)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x80)
	copy(b[0x80:], "PE\x00\x00")
	binary.LittleEndian.PutUint16(b[0x84:], m)
	opt := b[0x80+24:]
	binary.LittleEndian.PutUint16(opt, 0x20b)
	binary.LittleEndian.PutUint16(opt[0x44:], 10)
	copy(b[0x400:], "loader body")
	return b
}
