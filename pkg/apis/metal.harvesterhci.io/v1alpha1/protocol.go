package v1alpha1

// Protocol is how the addon speaks to a BMC.
type Protocol string

// Protocols the addon speaks.
const (
	ProtocolRedfish Protocol = "redfish"
	ProtocolIPMI    Protocol = "ipmi"
)

// Default ports of the two protocols.
const (
	IPMIPort    = 623
	RedfishPort = 443
)

// Candidate is a protocol on a port.
type Candidate struct {
	Protocol Protocol
	Port     int
}

// Candidates are the protocols and ports the addon tries on the BMC, in
// order. providerOptions (which only kubectl users write) decide first:
// redfish means Redfish on its port (443 when unset), then ipmitool means
// IPMI on its port, else on connection.port, else 623. Without them, any
// port but 623 means Redfish over HTTPS on it. Port 623, the UI's
// placeholder and the schema's default, does not say which: Redfish on 443
// is tried first, then IPMI on 623, as Seeder's BMC library tries them (a
// BMC with IPMI over LAN off, a common default, answers Redfish only).
func (c Connection) Candidates() []Candidate {
	if o := c.ProviderOptions; o != nil {
		if o.Redfish != nil {
			return []Candidate{{ProtocolRedfish, orDefault(o.Redfish.Port, RedfishPort)}}
		}
		if o.IPMITOOL != nil {
			return []Candidate{{ProtocolIPMI, orDefault(o.IPMITOOL.Port, orDefault(c.Port, IPMIPort))}}
		}
	}
	if c.Port == 0 || c.Port == IPMIPort {
		return []Candidate{{ProtocolRedfish, RedfishPort}, {ProtocolIPMI, IPMIPort}}
	}
	return []Candidate{{ProtocolRedfish, c.Port}}
}

func orDefault(port, def int) int {
	if port == 0 {
		return def
	}
	return port
}
