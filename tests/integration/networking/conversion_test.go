package networking

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// The API answers a conversion before it lands (packngo #134, #203). The
// chain must wait for it by reading the port, not by sending the conversion
// again, which the API refuses while one is in progress; and waiting is no
// failure to warn about.
func TestSlowConversionIsSentOnceAndWaitedFor(t *testing.T) {
	timings := framework.FastTimings()
	timings.PortConversion = 1500 * time.Millisecond
	env := framework.New(t, &shared, framework.Options{Timings: &timings})
	pool := env.CreatePool(framework.SeedPoolWith(t, "net-slow-conversion", framework.SeedLayer2Individual))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	inst := waitJoinedNetwork(t, env, pool.Name, equinixv1.NetworkTypeLayer2Individual)

	conversions := env.Sim.RequestsFor(metalsim.OpConvertLayer2)
	assert.Len(t, conversions, 1, "convertLayer2 requests: %+v", conversions)
	for _, ev := range env.Events(inst.Name) {
		if ev.Type == corev1.EventTypeWarning {
			assert.NotContains(t, ev.Message, "convert", "warning while a conversion landed: %s %s", ev.Reason, ev.Message)
		}
	}
	dev := readDevice(t, env, inst.Status.InstanceID)
	assertPorts(t, caseOf(t, equinixv1.NetworkTypeLayer2Individual).ports, dev)
	assert.Equal(t, corev1.ConditionTrue, nodeReady(t, env, inst.Name).Status)
}
