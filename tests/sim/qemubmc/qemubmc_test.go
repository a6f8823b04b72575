package qemubmc

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The BMC reads an image the machine's address names from where the test
// serves it, and any other URL as it was given.
func TestGuestURLsAreMappedToTheHost(t *testing.T) {
	o := Options{Guest: netip.MustParseAddrPort("10.0.2.100:80"), Host: "127.0.0.1:4321"}
	for in, want := range map[string]string{
		"http://10.0.2.100/boot/n/media.iso?mac=52:54:00:00:00:01":  "http://127.0.0.1:4321/boot/n/media.iso?mac=52:54:00:00:00:01",
		"http://10.0.2.100:80/boot/n/media.iso":                     "http://127.0.0.1:4321/boot/n/media.iso",
		"http://10.0.2.100:8080/boot/n/media.iso":                   "http://10.0.2.100:8080/boot/n/media.iso",
		"https://10.0.2.100/boot/n/media.iso":                       "https://10.0.2.100/boot/n/media.iso",
		"http://images.example.lan/firmware-update.iso":             "http://images.example.lan/firmware-update.iso",
		"http://10.0.2.1000/not-an-address-the-machine-reaches.iso": "http://10.0.2.1000/not-an-address-the-machine-reaches.iso",
	} {
		assert.Equal(t, want, o.guestToHost(in), in)
	}
}
