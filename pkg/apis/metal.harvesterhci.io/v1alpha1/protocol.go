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

// Protocol says which protocol the addon speaks to the BMC and on which port.
// The UI asks only for a host and a port, so the port decides: 623, IPMI's
// port and the schema's default, means IPMI, and any other port Redfish over
// HTTPS on that port. providerOptions, which only kubectl users write, decide
// first: redfish means Redfish on its port (443 when unset), then ipmitool
// means IPMI on its port, else on connection.port, else 623.
func (c Connection) Protocol() (protocol Protocol, port int) {
	if o := c.ProviderOptions; o != nil {
		if o.Redfish != nil {
			return ProtocolRedfish, orDefault(o.Redfish.Port, RedfishPort)
		}
		if o.IPMITOOL != nil {
			return ProtocolIPMI, orDefault(o.IPMITOOL.Port, orDefault(c.Port, IPMIPort))
		}
	}
	if c.Port == 0 || c.Port == IPMIPort {
		return ProtocolIPMI, IPMIPort
	}
	return ProtocolRedfish, c.Port
}

func orDefault(port, def int) int {
	if port == 0 {
		return def
	}
	return port
}
