package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

func TestManagementVLANID(t *testing.T) {
	ifaces := func(pairs ...equinixv1.InterfaceConfiguration) []equinixv1.InterfaceConfiguration { return pairs }
	tests := []struct {
		name    string
		tpl     equinixv1.InstanceTemplate
		want    int
		wantErr string
	}{
		{name: "layer3 is untagged", tpl: equinixv1.InstanceTemplate{EquinixMetal: equinixv1.EquinixMetal{NetworkingConfiguration: equinixv1.NetworkingConfiguration{Type: "layer3"}}}},
		{name: "empty type is layer3", tpl: equinixv1.InstanceTemplate{}},
		{
			name: "hybrid keeps management on layer 3",
			tpl: equinixv1.InstanceTemplate{
				EquinixMetal: equinixv1.EquinixMetal{
					NetworkingConfiguration: equinixv1.NetworkingConfiguration{
						Type: "hybrid", InterfaceConfiguration: ifaces(equinixv1.InterfaceConfiguration{Name: "eth1", VLANIDs: []string{"1000"}}),
					},
				},
			},
		},
		{
			name: "layer2-bonded defaults to first bond0 VLAN",
			tpl: equinixv1.InstanceTemplate{
				EquinixMetal: equinixv1.EquinixMetal{
					NetworkingConfiguration: equinixv1.NetworkingConfiguration{
						Type: "layer2-bonded", InterfaceConfiguration: ifaces(equinixv1.InterfaceConfiguration{Name: "bond0", VLANIDs: []string{"1000", "1001"}}),
					},
				},
			},
			want: 1000,
		},
		{
			name: "layer2-bonded explicit management VLAN",
			tpl: equinixv1.InstanceTemplate{
				EquinixMetal: equinixv1.EquinixMetal{
					NetworkingConfiguration: equinixv1.NetworkingConfiguration{
						Type: "layer2-bonded", ManagementVLAN: "1001", InterfaceConfiguration: ifaces(equinixv1.InterfaceConfiguration{Name: "bond0", VLANIDs: []string{"1000", "1001"}}),
					},
				},
			},
			want: 1001,
		},
		{
			name: "layer2-individual uses the first management port",
			tpl: equinixv1.InstanceTemplate{
				EquinixMetal: equinixv1.EquinixMetal{
					ManagementInterface: []string{"eth1"},
					NetworkingConfiguration: equinixv1.NetworkingConfiguration{
						Type: "layer2-individual",
						InterfaceConfiguration: ifaces(
							equinixv1.InterfaceConfiguration{Name: "eth0", VLANIDs: []string{"1000"}},
							equinixv1.InterfaceConfiguration{Name: "eth1", VLANIDs: []string{"1002", "1001"}},
						),
					},
				},
			},
			want: 1002,
		},
		{
			name:    "layer2-bonded without VLAN",
			tpl:     equinixv1.InstanceTemplate{EquinixMetal: equinixv1.EquinixMetal{NetworkingConfiguration: equinixv1.NetworkingConfiguration{Type: "layer2-bonded"}}},
			wantErr: "needs a management VLAN",
		},
		{
			name:    "VLAN out of Metal range",
			tpl:     equinixv1.InstanceTemplate{EquinixMetal: equinixv1.EquinixMetal{NetworkingConfiguration: equinixv1.NetworkingConfiguration{Type: "layer2-bonded", ManagementVLAN: "4000"}}},
			wantErr: "from 2 to 3999",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ManagementVLANID(tc.tpl)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
