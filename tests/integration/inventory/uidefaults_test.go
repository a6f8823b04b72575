package inventory

import (
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// The Harvester UI's defaults: the Out-of-Band Access form saves
// insecureTLS false (unless "Insecure TLS" is ticked) and has no CA field,
// and its port is 623 unless the user types another. Each test saves the
// UI's object unchanged (createUIInventory) and drives the real controller
// against the project's BMCs.

// selfSignedBMC starts the Redfish responder serving a certificate it
// signed itself, as most BMCs ship, on addr (a free loopback port when
// empty).
func selfSignedBMC(t *testing.T, addr string, opts bmcsim.Options) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	opts.Username, opts.Password = bmcUser, bmcPassword
	sim := bmcsim.New(opts)
	srv, err := bmcsim.NewServer(sim, addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, srv.SelfSigned())
	return sim, srv
}

// fingerprint is the SHA-256 fingerprint of the certificate srv serves now.
func fingerprint(t *testing.T, srv *bmcsim.Server) string {
	t.Helper()
	block, _ := pem.Decode(srv.Certificate())
	require.NotNil(t, block)
	return bmc.Fingerprint(block.Bytes)
}

// pinned is the certificate the Inventory's status pins.
func pinned(env *framework.Env, name string) *seederv1alpha1.PinnedCertificate {
	if b := hw(env, name).BMC; b != nil {
		return b.Certificate
	}
	return nil
}

// eventHolding reports whether an Event about the Inventory has reason and
// a message holding part.
func eventHolding(env *framework.Env, name, reason, part string) bool {
	for _, e := range env.Events(name) {
		if e.Reason == reason && strings.Contains(e.Message, part) {
			return true
		}
	}
	return false
}

// A Redfish BMC with a self-signed certificate, saved with the UI's
// defaults (insecureTLS false, no CA): trusted on first use, its
// fingerprint in the status and an Event. Its certificate changes (the BMC
// made a new one, or something in between presents its own): refused,
// nothing sent, the status saying both fingerprints and how to accept,
// until a person names the new one in the annotation.
func TestUIDefaultsTrustTheFirstCertificate(t *testing.T) {
	env := newEnv(t)
	sim, srv := selfSignedBMC(t, "", bmcsim.Options{})
	env.CreateReadyNode("tofu")
	env.CreateBMCSecret("tofu", bmcUser, bmcPassword)
	createUIInventory(t, env, "tofu", srv.Host, srv.Port, false, "")

	first := fingerprint(t, srv)
	env.Eventually(func() bool { return ready(env, "tofu") }, time.Minute, "a self-signed BMC saved with the UI's defaults never became ready")
	pin := pinned(env, "tofu")
	require.NotNil(t, pin)
	assert.Equal(t, first, pin.SHA256)
	assert.Equal(t, net.JoinHostPort(srv.Host, fmt.Sprint(srv.Port)), pin.Address)
	assert.Equal(t, seederv1alpha1.CertificateTrustedFirstUse, pin.TrustedBy)
	env.Eventually(func() bool { return eventHolding(env, "tofu", equinixv1.ReasonBMCCertificatePinned, first) }, time.Minute,
		"no Event says which certificate was trusted")

	// The BMC restarts its web server with a new certificate.
	require.NoError(t, srv.SelfSigned())
	second := fingerprint(t, srv)
	require.NoError(t, srv.GoAway())
	require.NoError(t, srv.ComeBack())
	env.Eventually(func() bool {
		return env.Inventory("tofu").Status.Status == seederv1alpha1.InventoryBMCCertificateChanged &&
			hasCondition(env, "tofu", equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCCertificateChanged)
	}, time.Minute, "a changed certificate was not refused")
	logins := sim.Logins()
	assert.Never(t, func() bool { return sim.Logins() != logins }, 3*time.Second, 100*time.Millisecond,
		"nothing is sent to a BMC whose certificate changed")
	c := conditionOf(env, "tofu", equinixv1.BMCReachable)
	assert.Contains(t, c.Message, first)
	assert.Contains(t, c.Message, second)
	assert.Contains(t, c.Message, equinixv1.AnnotationAcceptBMCCertificate+"="+second)
	assert.True(t, hasCondition(env, "tofu", equinixv1.ConditionStalled, metav1.ConditionTrue, equinixv1.ReasonBMCCertificateChanged),
		"the UI's banner says it")
	assert.Equal(t, first, pinned(env, "tofu").SHA256, "the pin stays")

	// A person compares the fingerprint with the BMC's own and accepts it.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, equinixv1.AnnotationAcceptBMCCertificate, strings.ToLower(second))
	_, err := env.Client.MetalV1alpha1().Inventories(ns).Patch(env.Ctx, "tofu", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		p := pinned(env, "tofu")
		return ready(env, "tofu") && p != nil && p.SHA256 == second && p.TrustedBy == seederv1alpha1.CertificateTrustedAccepted
	}, time.Minute, "the accepted certificate was not trusted")
	assert.True(t, env.EventRecorded("tofu", equinixv1.ReasonBMCCertificateAccepted))
	env.AssertAbsent(bmcPassword)
}

// conditionOf is the Inventory's condition of type typ.
func conditionOf(env *framework.Env, name, typ string) metav1.Condition {
	env.T.Helper()
	for _, c := range env.Inventory(name).Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	env.T.Fatalf("Inventory %s has no condition %s", name, typ)
	return metav1.Condition{}
}

// Port 623, the UI's default, on a BMC with IPMI over LAN off: Redfish on
// 443 answers, as with Seeder; the status says so, and the node gets the
// BMC's facts. Needs root (or CAP_NET_BIND_SERVICE) for port 443.
func TestUIDefaultsPort623ReachesARedfishOnlyBMC(t *testing.T) {
	host := framework.BMCAddress(t)
	env := newEnv(t)
	_, _ = selfSignedBMC(t, net.JoinHostPort(host, "443"), bmcsim.Options{})
	env.CreateReadyNode("rf-only")
	env.CreateBMCSecret("rf-only", bmcUser, bmcPassword)
	createUIInventory(t, env, "rf-only", host, seederv1alpha1.IPMIPort, false, "")

	env.Eventually(func() bool { return ready(env, "rf-only") }, time.Minute, "a Redfish-only BMC saved with port 623 never became ready")
	b := hw(env, "rf-only").BMC
	require.NotNil(t, b)
	assert.Equal(t, seederv1alpha1.ProtocolRedfish, b.Protocol)
	assert.Equal(t, net.JoinHostPort(host, "443"), b.Address)
	env.Eventually(func() bool { return node(t, env, "rf-only").Labels[equinixv1.LabelManufacturer] == "Supermicro" }, time.Minute,
		"the node did not get the BMC's facts")
	assert.True(t, env.EventRecorded("rf-only", equinixv1.ReasonBMCProtocolFound))
	require.NotNil(t, b.Certificate, "its self-signed certificate is pinned")
}

// Port 623 on a BMC without Redfish: nothing answers on 443, so IPMI on
// 623 is tried, and stays the protocol spoken. Needs root (or
// CAP_NET_BIND_SERVICE) for port 623.
func TestUIDefaultsPort623FallsBackToIPMI(t *testing.T) {
	host := framework.BMCAddress(t)
	sim := ipmisim.Require(t, ipmisim.Options{Username: bmcUser, Password: ipmiPassword})
	relay, err := ipmisim.NewRelayAt(net.JoinHostPort(host, "623"), net.JoinHostPort(sim.Host, fmt.Sprint(sim.Port)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	env := newEnv(t)
	env.CreateReadyNode("ipmi-only")
	env.CreateBMCSecret("ipmi-only", bmcUser, ipmiPassword)
	createUIInventory(t, env, "ipmi-only", host, seederv1alpha1.IPMIPort, false, "")

	env.Eventually(func() bool { return ready(env, "ipmi-only") }, time.Minute, "an IPMI BMC saved with port 623 never became ready")
	b := hw(env, "ipmi-only").BMC
	require.NotNil(t, b)
	assert.Equal(t, seederv1alpha1.ProtocolIPMI, b.Protocol)
	assert.Equal(t, net.JoinHostPort(host, "623"), b.Address)
	sessions := len(relay.Sessions())
	env.WaitPolls("ipmi-only", 3)
	assert.Greater(t, len(relay.Sessions())+1, sessions, "IPMI is spoken from now on")
	assert.Nil(t, b.Certificate)
}

// Every pollingInterval the UI's validator (^\d+[hms]$) accepts is saved,
// and one outside 1s..24h is read as the nearest bound, with a Warning
// Event once.
func TestUIIntervalsAreSavedAndClamped(t *testing.T) {
	env := newEnv(t)
	_, srv := redfishBMC(t)
	env.CreateReadyNode("zero")
	env.CreateBMCSecret("zero", bmcUser, bmcPassword)
	createUIInventoryEvery(t, env, "zero", srv.Host, srv.Port, true, "", "0s")
	env.Eventually(func() bool { return eventHolding(env, "zero", equinixv1.ReasonPollingIntervalClamped, "every 1s") }, time.Minute,
		"a 0s interval was not told clamped")
	env.WaitPolls("zero", 2)

	env.CreateReadyNode("two-days")
	env.CreateBMCSecret("two-days", bmcUser, bmcPassword)
	createUIInventoryEvery(t, env, "two-days", srv.Host, srv.Port, true, "", "48h")
	env.Eventually(func() bool {
		return ready(env, "two-days") && eventHolding(env, "two-days", equinixv1.ReasonPollingIntervalClamped, "every 24h0m0s")
	}, time.Minute, "a 48h interval was not told clamped")
	n := 0
	for _, e := range env.Events("zero") {
		if e.Reason == equinixv1.ReasonPollingIntervalClamped {
			n += int(e.Count)
		}
	}
	assert.Equal(t, 1, n, "told once, not at every poll")
}
