package vmrig

import (
	"encoding/binary"
	"regexp"
	"strings"
)

// HaltingKernel is a Linux bzImage of size bytes (at least 1 MiB) whose
// only code prints the command line its boot loader gave it on the first
// serial port, as "vmrig-kernel cmdline=[...]", and halts. It stands in
// for Harvester's kernel: iPXE loads it, and its initrd, as it would the
// real one, and the test reads what the script booted with
// (KernelCommandLine); the VM then idles instead of spinning on bytes
// that are no code. Like a kernel with the EFI stub it is an EFI
// application too (kernel_efi.go), which prints the command line through
// the firmware's console, so iPXE's EFI build boots it the same way.
func HaltingKernel(size int) []byte {
	const setupSects = 4 // the real-mode part: the boot sector and 4 sectors
	size = max(size, 1<<20)
	k := make([]byte, size)
	le := binary.LittleEndian
	k[0x1f1] = setupSects
	le.PutUint32(k[0x1f4:], uint32((size-(setupSects+1)*512+15)/16)) //nolint:gosec // G115: size is a few MiB
	le.PutUint16(k[0x1fe:], 0xaa55)
	copy(k[0x200:], []byte{0xeb, 0x7e}) // jmp 0x280, past the header
	copy(k[0x202:], "HdrS")
	le.PutUint16(k[0x206:], 0x020c) // boot protocol 2.12
	k[0x211] = 0x01                 // loadflags: LOADED_HIGH, a bzImage
	le.PutUint32(k[0x22c:], 0x37ffffff)
	le.PutUint32(k[0x238:], 2047) // cmdline_size

	// The boot loader enters at setup+0x200 in real mode with DS at the
	// setup's start, so DS offsets are file offsets; cmd_line_ptr (0x228)
	// points into the same 64 KiB.
	copy(k[0x280:], []byte{
		0xbe, 0x00, 0x03, // mov si, 0x300      ; the opening marker
		0xe8, 0x11, 0x00, // call print
		0x8b, 0x36, 0x28, 0x02, // mov si, [0x228] ; the command line
		0xe8, 0x0a, 0x00, // call print
		0xbe, 0x40, 0x03, // mov si, 0x340      ; the closing marker
		0xe8, 0x04, 0x00, // call print
		0xfa,       // cli
		0xf4,       // hlt
		0xeb, 0xfd, // jmp hlt
		// print: DS:SI, zero-terminated, to COM1 once it can take a byte
		0xac,       // lodsb
		0x84, 0xc0, // test al, al
		0x74, 0x12, // jz done
		0x88, 0xc4, // mov ah, al
		0xba, 0xfd, 0x03, // mov dx, 0x3fd (line status)
		0xec,       // in al, dx
		0xa8, 0x20, // test al, 0x20 (transmitter empty)
		0x74, 0xfb, // jz in
		0x88, 0xe0, // mov al, ah
		0xba, 0xf8, 0x03, // mov dx, 0x3f8
		0xee,       // out dx, al
		0xeb, 0xe9, // jmp lodsb
		0xc3, // done: ret
	})
	copy(k[0x300:], "\r\nvmrig-kernel cmdline=[\x00")
	copy(k[0x340:], "]\r\n\x00")
	writeEFIApplication(k)
	return k
}

var (
	cmdlineRE = regexp.MustCompile(`vmrig-kernel cmdline=\[([^\]]*)\]`)
	// ansiRE is a terminal control sequence: OVMF's console writes them
	// around what an application prints.
	ansiRE = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")
)

// KernelCommandLine finds the last command line a HaltingKernel printed
// in serial output. Through a UEFI console the line may be wrapped or
// carry terminal control sequences, which are left out.
func KernelCommandLine(serial string) (string, bool) {
	m := cmdlineRE.FindAllStringSubmatch(ansiRE.ReplaceAllString(serial, ""), -1)
	if len(m) == 0 {
		return "", false
	}
	return strings.NewReplacer("\r", "", "\n", "").Replace(m[len(m)-1][1]), true
}
