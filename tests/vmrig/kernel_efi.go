package vmrig

import "encoding/binary"

// The EFI half of HaltingKernel. A Linux kernel built with its EFI stub is
// one file that is both a bzImage and a PE32+ EFI application: iPXE's BIOS
// build boots it through the setup header, its EFI build hands it to the
// firmware's LoadImage. HaltingKernel is the same: the PE headers sit in
// the boot sector between "MZ" and the setup header, and the application's
// one section in the setup sectors the real-mode code leaves unused.
const (
	peHeader   = 0x40  // e_lfanew: the "PE" signature
	peSection  = 0x600 // file offset of the application's code
	peCodeRVA  = 0x1000
	peSizeOf   = 0x200 // the section's size, in the file and in memory
	peOptional = 0xf0  // size of the PE32+ optional header, 16 data directories
)

// efiApplication is the application's code and data. In the Microsoft x64
// calling convention the firmware passes the image handle in RCX and the
// system table in RDX; it prints, through the system table's ConOut
// (which OVMF sends to the serial port), the marker, the LoadOptions of
// its EFI_LOADED_IMAGE_PROTOCOL (the command line iPXE gave it) and the
// closing marker, and halts:
//
//	00 sub  rsp, 0x38              ; shadow space and one slot, aligned
//	04 mov  rbx, rdx               ; the system table
//	07 mov  r12, rcx               ; the image handle
//	0a mov  rcx, [rbx+0x40]        ; ConOut
//	0e lea  rdx, [rip+opening]
//	15 call [rcx+0x08]             ; ConOut->OutputString
//	18 mov  rax, [rbx+0x60]        ; BootServices
//	1c mov  rcx, r12
//	1f lea  rdx, [rip+guid]        ; EFI_LOADED_IMAGE_PROTOCOL_GUID
//	26 lea  r8, [rsp+0x28]
//	2b call [rax+0x98]             ; BootServices->HandleProtocol
//	31 test rax, rax
//	34 jnz  closing_out
//	36 mov  rax, [rsp+0x28]        ; the loaded image
//	3b mov  rdx, [rax+0x38]        ; its LoadOptions, UCS-2, NUL-ended
//	3f test rdx, rdx
//	42 jz   closing_out
//	44 mov  rcx, [rbx+0x40]
//	48 call [rcx+0x08]
//	4b closing_out: mov rcx, [rbx+0x40]
//	4f lea  rdx, [rip+closing]
//	56 call [rcx+0x08]
//	59 halt: cli
//	5a hlt
//	5b jmp  halt
//	60 guid, 70 opening, a2 closing
var efiApplication = func() []byte {
	code := []byte{
		0x48, 0x83, 0xec, 0x38,
		0x48, 0x89, 0xd3,
		0x49, 0x89, 0xcc,
		0x48, 0x8b, 0x4b, 0x40,
		0x48, 0x8d, 0x15, 0x5b, 0x00, 0x00, 0x00,
		0xff, 0x51, 0x08,
		0x48, 0x8b, 0x43, 0x60,
		0x4c, 0x89, 0xe1,
		0x48, 0x8d, 0x15, 0x3a, 0x00, 0x00, 0x00,
		0x4c, 0x8d, 0x44, 0x24, 0x28,
		0xff, 0x90, 0x98, 0x00, 0x00, 0x00,
		0x48, 0x85, 0xc0,
		0x75, 0x15,
		0x48, 0x8b, 0x44, 0x24, 0x28,
		0x48, 0x8b, 0x50, 0x38,
		0x48, 0x85, 0xd2,
		0x74, 0x07,
		0x48, 0x8b, 0x4b, 0x40,
		0xff, 0x51, 0x08,
		0x48, 0x8b, 0x4b, 0x40,
		0x48, 0x8d, 0x15, 0x4c, 0x00, 0x00, 0x00,
		0xff, 0x51, 0x08,
		0xfa,
		0xf4,
		0xeb, 0xfc,
		0x0f, 0x1f, 0x00, // padding to the GUID's 8-byte boundary
		// 5B1B31A1-9562-11d2-8E3F-00A0C969723B, in memory order.
		0xa1, 0x31, 0x1b, 0x5b, 0x62, 0x95, 0xd2, 0x11, 0x8e, 0x3f, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b,
	}
	code = append(code, ucs2("\r\nvmrig-kernel cmdline=[")...) // at 0x70
	code = append(code, ucs2("]\r\n")...)                      // at 0xa2
	return code
}()

// ucs2 is s, which is ASCII, as a NUL-ended UCS-2 string.
func ucs2(s string) []byte {
	out := make([]byte, 0, 2*len(s)+2)
	for _, c := range []byte(s) {
		out = append(out, c, 0)
	}
	return append(out, 0, 0)
}

// writeEFIApplication adds the PE32+ headers and the application to k, a
// bzImage of at least peSection+peSizeOf bytes.
func writeEFIApplication(k []byte) {
	le := binary.LittleEndian
	copy(k, "MZ")
	le.PutUint32(k[0x3c:], peHeader)
	copy(k[peHeader:], "PE\x00\x00")
	coff := k[peHeader+4:]
	le.PutUint16(coff[0:], 0x8664)      // Machine: x86-64
	le.PutUint16(coff[2:], 1)           // NumberOfSections
	le.PutUint16(coff[16:], peOptional) // SizeOfOptionalHeader
	// Characteristics: an executable image. Its relocations are not
	// stripped (there are none: the code is position-independent), so
	// the firmware may load it anywhere.
	le.PutUint16(coff[18:], 0x0206)
	opt := coff[20:]
	le.PutUint16(opt[0x00:], 0x20b)     // PE32+
	le.PutUint32(opt[0x04:], peSizeOf)  // SizeOfCode
	le.PutUint32(opt[0x10:], peCodeRVA) // AddressOfEntryPoint
	le.PutUint32(opt[0x14:], peCodeRVA) // BaseOfCode
	le.PutUint64(opt[0x18:], 0x10000000)
	le.PutUint32(opt[0x20:], 0x1000)           // SectionAlignment
	le.PutUint32(opt[0x24:], 0x200)            // FileAlignment
	le.PutUint32(opt[0x38:], peCodeRVA+0x1000) // SizeOfImage
	le.PutUint32(opt[0x3c:], 0x200)            // SizeOfHeaders
	le.PutUint16(opt[0x44:], 10)               // Subsystem: EFI application
	le.PutUint32(opt[0x6c:], 16)               // NumberOfRvaAndSizes, all empty
	section := opt[peOptional:]
	copy(section, ".text")
	le.PutUint32(section[8:], peSizeOf)    // VirtualSize
	le.PutUint32(section[12:], peCodeRVA)  // VirtualAddress
	le.PutUint32(section[16:], peSizeOf)   // SizeOfRawData
	le.PutUint32(section[20:], peSection)  // PointerToRawData
	le.PutUint32(section[36:], 0x60000020) // code, executable, readable
	copy(k[peSection:peSection+peSizeOf], efiApplication)
}
