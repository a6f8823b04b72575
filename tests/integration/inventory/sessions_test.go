package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A BMC that allows one session, polled every second and asked for a
// shutdown whose effect takes a while to show (a server that takes 15 s
// to switch): the controller logs in once for all of it, never holds two
// sessions, and sends one command.
func TestOneLoginForPollsAndAPowerAction(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMCWith(t, bmcsim.Options{MaxSessions: 1, PowerTransition: 15 * time.Second})
	env.CreateReadyNode("one-login")
	env.CreateBMCSecret("one-login", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("one-login", srv))
	env.Eventually(func() bool { return env.Inventory("one-login").Status.MachinePowerState == "on" }, time.Minute, "power never read")
	env.WaitPolls("one-login", 3)

	env.SetMaintenance("one-login", true)
	job := requestPower(t, env, "one-login", seederv1alpha1.PowerOperationShutdown)
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, "one-login", job))
	env.Eventually(func() bool { return env.Inventory("one-login").Status.MachinePowerState == "off" }, time.Minute,
		"the power state did not follow")
	env.WaitPolls("one-login", 2)
	logins := sim.Logins()
	assert.Equal(t, 1, logins.Accepted, "one login for the polls and the power action")
	assert.Equal(t, 1, logins.MostSessions, "never two sessions at once")
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
}

// A wrong password with a one-second poll: the BMC, which locks the account
// after three refused logins within a minute, sees one refused login and
// no more while the Secret stays as it is, so the account is never locked;
// the Secret, read again every few seconds meanwhile (it has no watch), is
// tried as soon as it changes, not after the hold.
func TestRefusedLoginHeldUntilTheSecretChanges(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMCWith(t, bmcsim.Options{Lockout: &bmcsim.Lockout{Failures: 3, Window: time.Minute, Duration: 5 * time.Minute}})
	const wrong = "Wrong-pw-never-shown-93"
	env.CreateReadyNode("held")
	env.CreateBMCSecret("held", bmcUser, wrong)
	env.CreateInventory(framework.RedfishInventory("held", srv))
	env.Eventually(func() bool {
		return hasCondition(env, "held", equinixv1.BMCAuthenticated, metav1.ConditionFalse, equinixv1.ReasonAuthenticationFailed)
	}, time.Minute, "a wrong password was not reported")
	// The node changes meanwhile: it brings the Inventory back, not a login.
	env.SetNodeReady("held", true)
	assert.Never(t, func() bool { return sim.Logins().Refused > 1 }, 15*time.Second, 200*time.Millisecond,
		"a refused login was tried again within the minute")
	assert.False(t, sim.Logins().Locked)

	setPassword(t, env, "held", bmcPassword)
	env.Eventually(func() bool {
		return hasCondition(env, "held", equinixv1.BMCAuthenticated, metav1.ConditionTrue, equinixv1.ReasonAuthenticated)
	}, 30*time.Second, "the fixed Secret waited for the hold")
	assert.Equal(t, 1, sim.Logins().Refused)
	env.AssertAbsent(wrong, bmcPassword)
}
