package metalsim

import (
	"fmt"
	"math/rand/v2"
)

// idSource hands out UUIDs and MAC addresses. IDs come from their own seeded
// generator so that, for a fixed seed and call order, object IDs are
// reproducible and do not disturb the fault generator's sequence.
type idSource struct {
	rng     *rand.Rand
	nextMAC uint64
}

func newIDSource(seed int64) *idSource {
	return &idSource{
		rng: rand.New(rand.NewPCG(uint64(seed), 0x1d5)),
		// The real fleet used several vendors; b4:96:91 (Intel) is one that
		// appeared on c3/m3 servers.
		nextMAC: 0xb49691000000 + 0x10,
	}
}

// uuid returns a random (version 4) UUID in canonical form.
func (g *idSource) uuid() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := g.rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// mac returns a MAC address never handed out before by this simulator.
func (g *idSource) mac() string {
	v := g.nextMAC
	g.nextMAC++
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x",
		byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// hex returns n random lowercase hex digits.
func (g *idSource) hex(n int) string {
	const digits = "0123456789abcdef"
	out := make([]byte, n)
	for i := range out {
		out[i] = digits[g.rng.IntN(len(digits))]
	}
	return string(out)
}

// shortID is the first block of a UUID, as the API's short_id fields are.
func shortID(id string) string {
	if len(id) < 8 {
		return id
	}
	return id[:8]
}
