package inventory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// The BMC's Secret is read once per poll: the pass that polls reads it,
// and the pass its own status write brings back, which finds nothing due
// for the BMC, does not.
func TestOneSecretReadPerPoll(t *testing.T) {
	env := newEnv(t)
	_, srv := redfishBMC(t)
	env.CreateReadyNode("frugal")
	env.CreateBMCSecret("frugal", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("frugal", srv))
	env.WaitPolls("frugal", 2)

	mark := secretReadsAndWrites(t, env, "frugal", 0)
	env.WaitPolls("frugal", 5)
	counts := secretReadsAndWrites(t, env, "frugal", mark.events)
	t.Logf("%d Secret reads, %d status writes", counts.reads, counts.writes)
	require.GreaterOrEqual(t, counts.writes, 5, "a status write per poll")
	// The window's edges may cut a poll's write off from its read.
	assert.LessOrEqual(t, counts.reads, counts.writes+1, "Secret reads per status write: %d reads, %d writes", counts.reads, counts.writes)
}

// auditCounts are the controller's requests about one Inventory in the
// audit log past an event: gets of its Secret (named after it), and its
// status writes.
type auditCounts struct {
	events, reads, writes int
}

func secretReadsAndWrites(t *testing.T, env *framework.Env, name string, from int) auditCounts {
	t.Helper()
	events, err := env.Cluster.AuditEvents()
	require.NoError(t, err)
	out := auditCounts{events: len(events)}
	for _, ev := range events[min(from, len(events)):] {
		ref := ev.ObjectRef
		if ev.Stage != "ResponseComplete" || ref == nil || ref.Name != name {
			continue
		}
		switch {
		case ev.Verb == "get" && ref.Resource == "secrets" && ref.Namespace == framework.BMCSecretNamespace:
			out.reads++
		case ev.Verb == "update" && ref.Resource == "inventories" && ref.Subresource == "status" &&
			ev.ResponseStatus != nil && ev.ResponseStatus.Code == 200:
			out.writes++
		}
	}
	return out
}
