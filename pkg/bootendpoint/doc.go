// Package bootendpoint is the boot endpoint of servers people own: the
// HTTP handler a DHCP server chains their PXE boots to. It serves a
// server the Harvester installer script and its install configuration
// only while an Instance holds the server (an open claim), and only to
// the MAC (and, where the BMC reported one, the SMBIOS UUID) the claim
// names:
//
//	GET /boot/ipxe?mac=<mac>&uuid=<uuid>           the installer script of the claim's arch and version
//	GET /boot/<nonce>/config.yaml?mac=<mac>        the install configuration (join token included)
//
// The first URL is fixed and holds no secret: a DHCP server hands it to
// every iPXE client, and iPXE fills in ${mac} and ${uuid}. The script it
// answers names the second URL, whose nonce is an HMAC of the claim's ID
// under a key kept in a Secret: it cannot be guessed without the key,
// it is the same for every boot of one claim (so a server that boots
// twice gets the same script), and it dies with the claim (the next
// claim of the same server has another ID). Everything else gets 404,
// and a refusal that named a MAC is told to Claims.Refused; the
// refusals are counted by reason. Neither a nonce nor anything the
// configuration holds is logged.
//
// The Claims (the open claims, and the configuration of one) come from
// the controller that runs the owned-server pools.
package bootendpoint
