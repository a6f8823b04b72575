package qemubmc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"
)

// Frames is what a capture of a machine's network holds, by the kinds a
// test asks about.
type Frames struct {
	Frames int
	// DHCP counts UDP datagrams from or to port 67 or 68 (DHCP and BOOTP)
	// up to the time the capture was counted until.
	DHCP int
	// DHCPLater counts those after it: what the machine did once the test
	// stopped asking (its firmware giving up, say) is told apart.
	DHCPLater int
	// TCPTo counts TCP segments to each address:port.
	TCPTo map[netip.AddrPort]int
}

// CountFrames reads a classic pcap file (what QEMU's filter-dump writes:
// little-endian, microseconds, Ethernet) and counts its frames; DHCP
// frames stamped after until (the zero time: none) count as DHCPLater.
func CountFrames(path string, until time.Time) (Frames, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Frames{}, fmt.Errorf("read capture: %w", err)
	}
	le := binary.LittleEndian
	if len(b) < 24 || le.Uint32(b) != 0xa1b2c3d4 {
		return Frames{}, errors.New("not a little-endian pcap file")
	}
	if link := le.Uint32(b[20:]); link != 1 {
		return Frames{}, fmt.Errorf("link type %d, not Ethernet", link)
	}
	c := Frames{TCPTo: map[netip.AddrPort]int{}}
	for off := 24; off+16 <= len(b); {
		n := int(le.Uint32(b[off+8:]))
		if off+16+n > len(b) {
			break // the last record, cut short when QEMU stopped
		}
		at := time.Unix(int64(le.Uint32(b[off:])), int64(le.Uint32(b[off+4:]))*int64(time.Microsecond))
		c.add(b[off+16:off+16+n], !until.IsZero() && at.After(until))
		off += 16 + n
	}
	return c, nil
}

func (c *Frames) add(f []byte, later bool) {
	c.Frames++
	be := binary.BigEndian
	if len(f) < 14+20 || be.Uint16(f[12:]) != 0x0800 {
		return
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if len(ip) < ihl+4 {
		return
	}
	src, dst := be.Uint16(ip[ihl:]), be.Uint16(ip[ihl+2:])
	switch ip[9] {
	case 17: // UDP
		if src == 67 || src == 68 || dst == 67 || dst == 68 {
			if later {
				c.DHCPLater++
			} else {
				c.DHCP++
			}
		}
	case 6: // TCP
		to := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), dst)
		c.TCPTo[to]++
	}
}
