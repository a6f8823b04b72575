package bmcinventory

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// A BMC that allows one session, polled every second and asked for a
// reboot whose effect takes a while to show (a server that takes 15 s to
// come back): the controller logs in once for all of it, never holds two
// sessions, and sends one command.
func TestOneLoginForPollsAndAPowerAction(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMCWith(t, bmcsim.Options{MaxSessions: 1, PowerTransition: 15 * time.Second})
	createNode(t, env, "one-login")
	bmcSecret(t, env, "one-login", bmcUser, bmcPassword)
	create(t, env, redfishInventory("one-login", "one-login", srv))
	env.Eventually(func() bool { return inventory(t, env, "one-login").Status.PowerState == "on" }, time.Minute, "power never read")
	polls(t, env, "one-login", 3)

	maintenance(t, env, "one-login", true)
	patchSpec(t, env, "one-login", map[string]any{"rebootRequestedAt": time.Now().UTC().Format(time.RFC3339)})
	env.Eventually(func() bool { return len(sim.Resets()) == 1 }, time.Minute, "the reboot was not sent")
	readyAgain(t, env, "one-login")
	env.Eventually(func() bool {
		la := inventory(t, env, "one-login").Status.LastPowerAction
		return la != nil && la.Action == v1.PowerActionReboot && la.Result == v1.PowerResultSucceeded
	}, time.Minute, "the reboot did not succeed")
	polls(t, env, "one-login", 2)
	logins := sim.Logins()
	assert.Equal(t, 1, logins.Accepted, "one login for the polls and the power action")
	assert.Equal(t, 1, logins.MostSessions, "never two sessions at once")
	assert.Equal(t, []string{"PowerCycle"}, sim.Resets())
}

// A wrong password with a one-second poll: the BMC, which locks the account
// after three refused logins within a minute, sees one refused login and
// no more while the Secret stays as it is, so the account is never locked;
// the fixed Secret is tried at once, not after the hold.
func TestRefusedLoginHeldUntilTheSecretChanges(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMCWith(t, bmcsim.Options{Lockout: &bmcsim.Lockout{Failures: 3, Window: time.Minute, Duration: 5 * time.Minute}})
	const wrong = "Wrong-pw-never-shown-93"
	createNode(t, env, "held")
	bmcSecret(t, env, "held", bmcUser, wrong)
	create(t, env, redfishInventory("held", "held", srv))
	env.Eventually(func() bool {
		return hasCondition(t, env, "held", v1.BMCAuthenticated, metav1.ConditionFalse, v1.ReasonAuthenticationFailed)
	}, time.Minute, "a wrong password was not reported")
	// The node changes meanwhile: it brings the inventory back, not a login.
	readyAgain(t, env, "held")
	assert.Never(t, func() bool { return sim.Logins().Refused > 1 }, 15*time.Second, 200*time.Millisecond,
		"a refused login was tried again within the minute")
	assert.False(t, sim.Logins().Locked)

	sec, err := env.Kube.CoreV1().Secrets(framework.Namespace).Get(env.Ctx, "held", metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data["password"] = []byte(bmcPassword)
	_, err = env.Kube.CoreV1().Secrets(framework.Namespace).Update(env.Ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		return hasCondition(t, env, "held", v1.BMCAuthenticated, metav1.ConditionTrue, v1.ReasonAuthenticated)
	}, 30*time.Second, "the fixed Secret waited for the hold")
	assert.Equal(t, 1, sim.Logins().Refused)
	env.AssertAbsent(wrong, bmcPassword)
}

// An IPMI BMC that never answers is unreachable, as a Redfish one whose
// port refuses connections is, not a BMC error.
func TestSilentIPMIBMCIsUnreachable(t *testing.T) {
	env := newEnv(t)
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	createNode(t, env, "silent")
	bmcSecret(t, env, "silent", bmcUser, ipmiPassword)
	create(t, env, &v1.BMCInventory{
		ObjectMeta: metav1.ObjectMeta{Name: "silent"},
		Spec: v1.BMCInventorySpec{
			NodeName:          "silent",
			BMC:               v1.BMCEndpoint{Protocol: v1.BMCProtocolIPMI, Host: "127.0.0.1", Port: int32(silent.LocalAddr().(*net.UDPAddr).Port)},
			CredentialsSecret: v1.SecretReference{Name: "silent"},
			PollInterval:      &pollEvery,
		},
	})
	env.Eventually(func() bool {
		return hasCondition(t, env, "silent", v1.BMCReachable, metav1.ConditionFalse, v1.ReasonBMCUnreachable)
	}, time.Minute, "a silent IPMI BMC was not reported unreachable")
}
