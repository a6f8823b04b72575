package harvester

import (
	"fmt"
	"strconv"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

const defaultManagementPort = "eth0"

// ManagementVLANID returns the VLAN tag of Harvester's management network for
// servers made from tpl, for JoinConfigInput.VLANID. Only the layer-2 network
// types tag it: the others keep the management network on the untagged
// layer-3 bond. The tag is spec.networkingConfiguration.managementVLAN or, by
// default, the first VLAN of the management port (bond0 for layer2-bonded, the
// first managementInterface for layer2-individual); Equinix delivers a
// virtual network on a layer-2 port tagged with its VXLAN number.
func ManagementVLANID(tpl equinixv1.InstanceTemplate) (int, error) {
	nc := tpl.NetworkingConfiguration
	var port string
	switch nc.Type {
	case equinixv1.NetworkTypeLayer2Bonded:
		port = "bond0"
	case equinixv1.NetworkTypeLayer2Individual:
		port = defaultManagementPort
		if len(tpl.ManagementInterface) > 0 {
			port = tpl.ManagementInterface[0]
		}
	default:
		return 0, nil
	}
	vlan := nc.ManagementVLAN
	if vlan == "" {
		vlan = firstVLAN(nc.InterfaceConfiguration, port)
	}
	if vlan == "" {
		return 0, fmt.Errorf("network type %s needs a management VLAN: set managementVLAN or list a VLAN for %s", nc.Type, port)
	}
	id, err := strconv.Atoi(vlan)
	if err != nil || id < 2 || id > 3999 {
		return 0, fmt.Errorf("management VLAN %q is not a VLAN ID from 2 to 3999", vlan)
	}
	return id, nil
}

func firstVLAN(ifaces []equinixv1.InterfaceConfiguration, port string) string {
	for _, iface := range ifaces {
		if iface.Name == port && len(iface.VLANIDs) > 0 {
			return iface.VLANIDs[0]
		}
	}
	return ""
}
