package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConnectionProtocol(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conn     Connection
		protocol Protocol
		port     int
	}{
		{name: "the UI's default port is IPMI", conn: Connection{Host: "10.0.0.1", Port: 623}, protocol: ProtocolIPMI, port: 623},
		{name: "no port (a Go client's zero) is IPMI", conn: Connection{Host: "10.0.0.1"}, protocol: ProtocolIPMI, port: 623},
		{name: "443 is Redfish", conn: Connection{Host: "10.0.0.1", Port: 443}, protocol: ProtocolRedfish, port: 443},
		{name: "any other port is Redfish on it", conn: Connection{Host: "10.0.0.1", Port: 8443}, protocol: ProtocolRedfish, port: 8443},
		{name: "redfish option wins over the IPMI port",
			conn:     Connection{Port: 623, ProviderOptions: &ProviderOptions{Redfish: &RedfishOptions{Port: 8443}}},
			protocol: ProtocolRedfish, port: 8443},
		{name: "redfish option without a port is 443",
			conn:     Connection{Port: 623, ProviderOptions: &ProviderOptions{Redfish: &RedfishOptions{}}},
			protocol: ProtocolRedfish, port: 443},
		{name: "redfish before ipmitool",
			conn:     Connection{ProviderOptions: &ProviderOptions{Redfish: &RedfishOptions{Port: 443}, IPMITOOL: &IPMITOOLOptions{Port: 623}}},
			protocol: ProtocolRedfish, port: 443},
		{name: "ipmitool on its own port",
			conn:     Connection{Port: 443, ProviderOptions: &ProviderOptions{IPMITOOL: &IPMITOOLOptions{Port: 6230}}},
			protocol: ProtocolIPMI, port: 6230},
		{name: "ipmitool without a port takes connection.port",
			conn:     Connection{Port: 6231, ProviderOptions: &ProviderOptions{IPMITOOL: &IPMITOOLOptions{CipherSuite: "17"}}},
			protocol: ProtocolIPMI, port: 6231},
		{name: "ipmitool without any port is 623",
			conn:     Connection{ProviderOptions: &ProviderOptions{IPMITOOL: &IPMITOOLOptions{}}},
			protocol: ProtocolIPMI, port: 623},
		{name: "options the addon does not speak leave the port rule",
			conn:     Connection{Port: 8443, ProviderOptions: &ProviderOptions{IntelAMT: &IntelAMTOptions{Port: 16992}}},
			protocol: ProtocolRedfish, port: 8443},
	} {
		t.Run(tc.name, func(t *testing.T) {
			protocol, port := tc.conn.Protocol()
			assert.Equal(t, tc.protocol, protocol)
			assert.Equal(t, tc.port, port)
		})
	}
}

func TestIsPowerOperation(t *testing.T) {
	for _, op := range []string{"shutdown", "poweron", "reboot"} {
		assert.True(t, IsPowerOperation(op), op)
	}
	for _, op := range []string{"", "hibernate", "Reboot", "on"} {
		assert.False(t, IsPowerOperation(op), op)
	}
}
