package qemubmc

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frame is an Ethernet frame with an IPv4 header of protocol proto and
// the first 4 bytes of a UDP or TCP header.
func frame(proto byte, dst [4]byte, srcPort, dstPort uint16) []byte {
	f := make([]byte, 14+20+8)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[9] = 0x45, proto
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[20:], srcPort)
	binary.BigEndian.PutUint16(ip[22:], dstPort)
	return f
}

// The counter sees DHCP when there is some: a zero in the boot test is
// the network's, not the parser's.
func TestCountFrames(t *testing.T) {
	var b []byte
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr, 0xa1b2c3d4)
	binary.LittleEndian.PutUint32(hdr[20:], 1)
	b = append(b, hdr...)
	for _, f := range [][]byte{
		frame(17, [4]byte{255, 255, 255, 255}, 68, 67), // DHCPDISCOVER
		frame(17, [4]byte{10, 0, 2, 15}, 67, 68),       // its answer
		frame(6, [4]byte{10, 0, 2, 100}, 40000, 80),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x08, 0x06}, // ARP
	} {
		rec := make([]byte, 16)
		// The DHCP answer comes a second after the rest: counted later.
		at := uint32(1000)
		if len(f) > 14+23 && f[14+21] == 67 && f[14+23] == 68 { // the answer: from port 67 to 68
			at = 1001
		}
		binary.LittleEndian.PutUint32(rec, at)
		binary.LittleEndian.PutUint32(rec[8:], uint32(len(f)))
		binary.LittleEndian.PutUint32(rec[12:], uint32(len(f)))
		b = append(append(b, rec...), f...)
	}
	path := filepath.Join(t.TempDir(), "c.pcap")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	c, err := CountFrames(path, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, 4, c.Frames)
	assert.Equal(t, 2, c.DHCP)
	assert.Zero(t, c.DHCPLater)
	c, err = CountFrames(path, time.Unix(1000, 0))
	require.NoError(t, err)
	assert.Equal(t, 1, c.DHCP)
	assert.Equal(t, 1, c.DHCPLater)
	assert.Equal(t, 1, c.TCPTo[netip.MustParseAddrPort("10.0.2.100:80")])
}
