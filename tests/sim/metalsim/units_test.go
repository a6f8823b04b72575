package metalsim

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTimingsScale(t *testing.T) {
	d := DefaultTimings()
	tests := []struct {
		name   string
		factor float64
		want   time.Duration
	}{
		{"hundredth", 0.01, d.Provision / 100},
		{"identity", 1, d.Provision},
		{"zero", 0, 0},
		{"negative counts as zero", -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := d.Scale(tt.factor)
			assert.Equal(t, tt.want, s.Provision)
			assert.Equal(t, time.Duration(float64(d.ReservationRelease)*max(tt.factor, 0)), s.ReservationRelease)
		})
	}
}

func TestNetmask(t *testing.T) {
	tests := map[string]string{
		"147.75.0.0/31":            "255.255.255.254",
		"147.75.0.0/32":            "255.255.255.255",
		"10.0.0.0/8":               "255.0.0.0",
		"0.0.0.0/0":                "0.0.0.0",
		"2604:1380::/127":          "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe",
		"2604:1380::/56":           "ffff:ffff:ffff:ff00:0:0:0:0",
		"2604:1380:4641:c500::/64": "ffff:ffff:ffff:ffff:0:0:0:0",
	}
	for prefix, want := range tests {
		t.Run(prefix, func(t *testing.T) {
			assert.Equal(t, want, netmask(netip.MustParsePrefix(prefix)))
		})
	}
}

func TestAllocatorNeverRepeats(t *testing.T) {
	a := newAllocator()
	seen := map[netip.Prefix]bool{}
	for range 100 {
		for _, p := range []netip.Prefix{a.managementPublic4(), a.privateBlock(), a.managementPublic6(), a.elastic(4, false), a.elastic(1, true)} {
			assert.False(t, seen[p], p.String())
			seen[p] = true
			assert.Equal(t, p.Masked(), p, "blocks are aligned")
		}
	}
}

func TestParseAssignAddress(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"139.178.64.1", "139.178.64.1/32", false},
		{"139.178.64.1/32", "139.178.64.1/32", false},
		{"139.178.64.0/30", "139.178.64.0/30", false},
		{"nope", "", true},
		{"1.2.3.4/40", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseAssignAddress(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tt.want, got.String())
		})
	}
}

func TestFakeClock(t *testing.T) {
	c := NewFakeClock(testStart)
	c.Advance(time.Minute)
	assert.Equal(t, testStart.Add(time.Minute), c.Now())
	c.Set(testStart)
	assert.Equal(t, testStart, c.Now())
}
