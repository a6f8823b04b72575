package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConnectionCandidates(t *testing.T) {
	redfish := func(port int) Candidate { return Candidate{ProtocolRedfish, port} }
	ipmi := func(port int) Candidate { return Candidate{ProtocolIPMI, port} }
	for _, tc := range []struct {
		name string
		conn Connection
		want []Candidate
	}{
		{name: "the UI's default port: Redfish on 443, then IPMI on 623", conn: Connection{Host: "10.0.0.1", Port: 623},
			want: []Candidate{redfish(443), ipmi(623)}},
		{name: "no port (a Go client's zero) as 623", conn: Connection{Host: "10.0.0.1"}, want: []Candidate{redfish(443), ipmi(623)}},
		{name: "443 is Redfish", conn: Connection{Host: "10.0.0.1", Port: 443}, want: []Candidate{redfish(443)}},
		{name: "any other port is Redfish on it", conn: Connection{Host: "10.0.0.1", Port: 8443}, want: []Candidate{redfish(8443)}},
		{name: "redfish option wins over the IPMI port",
			conn: Connection{Port: 623, ProviderOptions: &ProviderOptions{Redfish: &RedfishOptions{Port: 8443}}}, want: []Candidate{redfish(8443)}},
		{name: "redfish option without a port is 443",
			conn: Connection{Port: 623, ProviderOptions: &ProviderOptions{Redfish: &RedfishOptions{}}}, want: []Candidate{redfish(443)}},
		{name: "redfish before ipmitool",
			conn: Connection{ProviderOptions: &ProviderOptions{Redfish: &RedfishOptions{Port: 443}, IPMITOOL: &IPMITOOLOptions{Port: 623}}},
			want: []Candidate{redfish(443)}},
		{name: "ipmitool on its own port",
			conn: Connection{Port: 443, ProviderOptions: &ProviderOptions{IPMITOOL: &IPMITOOLOptions{Port: 6230}}}, want: []Candidate{ipmi(6230)}},
		{name: "ipmitool without a port takes connection.port",
			conn: Connection{Port: 6231, ProviderOptions: &ProviderOptions{IPMITOOL: &IPMITOOLOptions{CipherSuite: "17"}}}, want: []Candidate{ipmi(6231)}},
		{name: "ipmitool without any port is 623, IPMI only",
			conn: Connection{ProviderOptions: &ProviderOptions{IPMITOOL: &IPMITOOLOptions{}}}, want: []Candidate{ipmi(623)}},
		{name: "options the addon does not speak leave the port rule",
			conn: Connection{Port: 8443, ProviderOptions: &ProviderOptions{IntelAMT: &IntelAMTOptions{Port: 16992}}}, want: []Candidate{redfish(8443)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.conn.Candidates())
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
