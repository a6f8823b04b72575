// Package claimstest is a bootendpoint.Claims for tests, the simulated
// owned servers and the bench: claims put in and taken out by hand, the
// install configuration rendered by pkg/harvester as the controller
// renders it, and a record of every refusal and configuration served.
package claimstest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// Join is what every configuration joins with.
type Join struct {
	// ServerURL is the cluster's VIP or URL; Token the join token.
	ServerURL, Token string
	// PasswordHash is the console password's SHA-512 crypt hash.
	PasswordHash string
	// InstallDevice is used for claims that name none.
	InstallDevice string
}

// Claim is an open claim and what its configuration needs beyond it.
type Claim struct {
	bootendpoint.Claim
	// InstallDevice is the server's install disk (the Inventory's
	// primaryDisk); empty uses Join.InstallDevice.
	InstallDevice string
	// OtherMACs are the server's other NICs' MACs (canonical).
	OtherMACs []string
}

// Refusal is one refusal the endpoint told of.
type Refusal struct{ MAC, Reason string }

// Claims holds the open claims by MAC.
type Claims struct {
	join Join

	mu      sync.Mutex
	open    map[string]Claim
	refused []Refusal
	served  map[string]int // configurations served, by MAC
	steps   []Step
}

// Step is one file the endpoint served under a claim.
type Step struct{ MAC, File string }

// New returns Claims whose configurations join with j.
func New(j Join) *Claims {
	return &Claims{join: j, open: map[string]Claim{}, served: map[string]int{}}
}

// Add opens c (replacing any claim of its MAC).
func (c *Claims) Add(cl Claim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open[cl.MAC] = cl
}

// Close ends the claim of mac, as a join or a released server does.
func (c *Claims) Close(mac string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.open, mac)
}

// Open implements bootendpoint.Claims.
func (c *Claims) Open(mac string) (bootendpoint.Claim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.open[mac]
	return cl.Claim, ok
}

// InstallConfig implements bootendpoint.Claims: the configuration the
// controller renders for a server of one's own, its host name the server's
// (its Inventory's name, which its node takes), its management interface
// the claim's MAC and its ISO the claim's architecture's.
func (c *Claims) InstallConfig(_ context.Context, b bootendpoint.Claim) ([]byte, error) {
	c.mu.Lock()
	cl := c.open[b.MAC]
	c.mu.Unlock()
	iso, err := harvester.ISOURLForArch(b.Version, b.Arch, "")
	if err != nil {
		return nil, fmt.Errorf("claim of %s: %w", b.MAC, err)
	}
	in := harvester.JoinConfigInput{
		ServerURL: c.join.ServerURL, Token: c.join.Token, Hostname: b.Server, Instance: b.Instance, PasswordHash: c.join.PasswordHash,
		BondOptions: b.Bond, InstallDevice: cl.InstallDevice, ISOURL: iso,
	}
	if in.InstallDevice == "" {
		in.InstallDevice = c.join.InstallDevice
	}
	if b.BootMode == equinixv1.BootModeSingleBoot {
		in.SingleBoot = true
	} else {
		in.MACs = []string{b.MAC}
	}
	out, err := harvester.RenderJoinConfig(in)
	if err != nil {
		return nil, fmt.Errorf("claim of %s: %w", b.MAC, err)
	}
	c.mu.Lock()
	c.served[b.MAC]++
	c.mu.Unlock()
	return out, nil
}

// Refused implements bootendpoint.Claims.
func (c *Claims) Refused(mac, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = append(c.refused, Refusal{MAC: mac, Reason: reason})
}

// Refusals returns every refusal so far.
func (c *Claims) Refusals() []Refusal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Refusal(nil), c.refused...)
}

// ConfigsServed is how many configurations were rendered for mac.
func (c *Claims) ConfigsServed(mac string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served[mac]
}

// Served implements bootendpoint.Claims: it records the step.
func (c *Claims) Served(b bootendpoint.Claim, file string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps = append(c.steps, Step{MAC: b.MAC, File: file})
}

// Steps returns every file served so far, in order.
func (c *Claims) Steps() []Step {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Step(nil), c.steps...)
}

// OtherNIC implements bootendpoint.Claims: the open claim one of whose
// OtherMACs is mac.
func (c *Claims) OtherNIC(mac string) (bootendpoint.Claim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.open {
		if slices.Contains(cl.OtherMACs, mac) {
			return cl.Claim, true
		}
	}
	return bootendpoint.Claim{}, false
}
