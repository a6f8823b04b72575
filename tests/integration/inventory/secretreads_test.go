package inventory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// A poll that finds nothing new writes nothing (apiserver writes per poll:
// 0), and reads the BMC's Secret once: the pass that polls reads it, and a
// pass that finds nothing due for the BMC does not.
func TestOneSecretReadAndNoWritePerPoll(t *testing.T) {
	env := newEnv(t)
	_, srv := redfishBMC(t)
	env.CreateReadyNode("frugal")
	env.CreateBMCSecret("frugal", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("frugal", srv))
	env.WaitPolls("frugal", 2)

	mark := secretReadsAndWrites(t, env, "frugal", 0)
	env.WaitPolls("frugal", 5)
	counts := secretReadsAndWrites(t, env, "frugal", mark.events)
	t.Logf("%d Secret reads, %d status writes in 5 polls", counts.reads, counts.writes)
	assert.Zero(t, counts.writes, "a poll that found nothing new wrote the status")
	// The window's edges may cut a poll's read off.
	assert.LessOrEqual(t, counts.reads, 6, "Secret reads in 5 polls")
	assert.GreaterOrEqual(t, counts.reads, 4, "Secret reads in 5 polls")
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
