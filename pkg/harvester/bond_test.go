package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeBondOptions(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    map[string]string
		wantErr string
	}{
		{name: "nil gets installer defaults", in: nil, want: map[string]string{"mode": "active-backup", "miimon": "100"}},
		{name: "seed sample", in: map[string]string{"mode": "balance-tlb", "miimon": "100"}, want: map[string]string{"mode": "balance-tlb", "miimon": "100"}},
		{name: "mode only gets link monitoring", in: map[string]string{"mode": "balance-alb"}, want: map[string]string{"mode": "balance-alb", "miimon": "100"}},
		{name: "miimon only gets default mode", in: map[string]string{"miimon": "200"}, want: map[string]string{"mode": "active-backup", "miimon": "200"}},
		{name: "ARP monitoring gets no miimon", in: map[string]string{"mode": "active-backup", "arp_interval": "100", "arp_ip_target": "10.0.0.1,10.0.0.2"}, want: map[string]string{"mode": "active-backup", "arp_interval": "100", "arp_ip_target": "10.0.0.1,10.0.0.2"}},
		{name: "LACP extras", in: map[string]string{"mode": "802.3ad", "xmit_hash_policy": "layer3+4", "lacp_rate": "fast"}, want: map[string]string{"mode": "802.3ad", "xmit_hash_policy": "layer3+4", "lacp_rate": "fast", "miimon": "100"}},
		{name: "values are trimmed", in: map[string]string{"mode": " balance-tlb "}, want: map[string]string{"mode": "balance-tlb", "miimon": "100"}},
		{name: "unknown mode", in: map[string]string{"mode": "lacp"}, wantErr: `unknown mode "lacp"`},
		{name: "numeric mode", in: map[string]string{"mode": "4"}, wantErr: "unknown mode"},
		{name: "non-numeric miimon", in: map[string]string{"miimon": "fast"}, wantErr: "miimon"},
		{name: "uppercase key", in: map[string]string{"Mode": "balance-tlb"}, wantErr: "option name"},
		{name: "dotted key", in: map[string]string{"a.b": "c"}, wantErr: "option name"},
		{name: "empty value", in: map[string]string{"primary": ""}, wantErr: "primary"},
		{name: "quote in value", in: map[string]string{"primary": `eth0"`}, wantErr: "primary"},
		{name: "iPXE expansion in value", in: map[string]string{"primary": "${net0/mac}"}, wantErr: "primary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeBondOptions(tc.in)
			if tc.wantErr != "" {
				assert.ErrorIs(t, err, ErrInvalidBondOptions)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNormalizeBondOptionsLimit(t *testing.T) {
	in := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"} {
		in[k] = "1"
	}
	_, err := NormalizeBondOptions(in)
	assert.ErrorIs(t, err, ErrInvalidBondOptions)
}
