package inventory

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// A drive of a node's server that predicts its failure, while its health
// still reads OK, shows in the node's metrics, turns the node's condition
// HardwareHealthy False naming the drive, and is one Warning Event however
// many polls see it; the condition is not written again while nothing
// changes, and all comes back to True once the drive no longer predicts
// its failure. A BMC gone makes the condition Unknown, and the node's
// series go with its inventory.
func TestDriveFailurePredictedSignals(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	env.CreateReadyNode("hh-node")
	env.CreateBMCSecret("hh-node", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("hh-node", srv))

	env.Eventually(func() bool {
		c := hardwareHealthy(t, env, "hh-node")
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == equinixv1.ReasonHardwareOK
	}, time.Minute, "the node did not get HardwareHealthy=True")
	assert.Equal(t, map[string]float64{"": 1}, gauge(t, "equinix_addon_bmc_reachable", "hh-node"))
	assert.Equal(t, map[string]float64{"": 1}, gauge(t, "equinix_addon_bmc_authenticated", "hh-node"))
	assert.Equal(t, map[string]float64{"Thermal": 0, "PowerSupplies": 0, "Fans": 0, "Storage": 0, "Memory": 0, "Processors": 0},
		gauge(t, "equinix_addon_hardware_health", "hh-node"))
	assert.Equal(t, map[string]float64{"": 1}, gauge(t, "equinix_addon_hardware_poll_interval_seconds", "hh-node"))
	assert.Greater(t, gauge(t, "equinix_addon_hardware_last_poll_timestamp_seconds", "hh-node")[""], float64(time.Now().Add(-time.Minute).Unix()))

	require.NoError(t, sim.SetFailurePredicted("Disk 1", true))
	env.Eventually(func() bool {
		c := hardwareHealthy(t, env, "hh-node")
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == equinixv1.ReasonFailurePredicted &&
			c.Message == "Storage: Disk 1: Warning, failure predicted"
	}, time.Minute, "HardwareHealthy does not name the drive predicting its failure")
	assert.Equal(t, 2.0, gauge(t, "equinix_addon_hardware_health", "hh-node")["Storage"])
	assert.Equal(t, 1.0, gauge(t, "equinix_addon_hardware_predicted_failures", "hh-node")["Storage"])
	assert.Equal(t, 0.0, gauge(t, "equinix_addon_hardware_predicted_failures", "hh-node")["Memory"])
	written := hardwareHealthy(t, env, "hh-node")

	// More polls see the same: no second Event, no second write.
	env.WaitPolls("hh-node", 3)
	predicted := 0
	for _, e := range env.Events("hh-node") {
		if strings.Contains(e.Message, "failure predicted") {
			predicted++
			assert.Equal(t, corev1.EventTypeWarning, e.Type)
			assert.Equal(t, equinixv1.ReasonHardwareWarning, e.Reason)
			assert.Equal(t, "Health: Storage is Warning (Disk 1: Warning, failure predicted), was OK", e.Message)
		}
	}
	assert.Equal(t, 1, predicted, "one Warning Event for the predicted failure")
	assert.Equal(t, written, hardwareHealthy(t, env, "hh-node"), "the condition was written again though nothing changed")
	assert.Equal(t, 1.0, gauge(t, "equinix_addon_hardware_events_forwarded_total", "hh-node")["Warning"])

	require.NoError(t, sim.SetFailurePredicted("Disk 1", false))
	env.Eventually(func() bool {
		c := hardwareHealthy(t, env, "hh-node")
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == equinixv1.ReasonHardwareOK
	}, time.Minute, "HardwareHealthy did not recover")
	assert.Equal(t, 0.0, gauge(t, "equinix_addon_hardware_health", "hh-node")["Storage"])
	assert.Equal(t, 0.0, gauge(t, "equinix_addon_hardware_predicted_failures", "hh-node")["Storage"])

	// The BMC goes away: its health is unknown.
	require.NoError(t, srv.GoAway())
	env.Eventually(func() bool {
		c := hardwareHealthy(t, env, "hh-node")
		return c != nil && c.Status == corev1.ConditionUnknown && c.Reason == equinixv1.ReasonBMCUnreachable
	}, time.Minute, "HardwareHealthy did not turn Unknown with the BMC gone")
	assert.Equal(t, map[string]float64{"": 0}, gauge(t, "equinix_addon_bmc_reachable", "hh-node"))
	assert.Equal(t, map[string]float64{"": 0}, gauge(t, "equinix_addon_bmc_authenticated", "hh-node"))

	require.NoError(t, env.Client.MetalV1alpha1().Inventories(ns).Delete(env.Ctx, "hh-node", metav1.DeleteOptions{}))
	env.Eventually(func() bool {
		for _, name := range []string{"equinix_addon_hardware_health", "equinix_addon_bmc_reachable",
			"equinix_addon_hardware_last_poll_timestamp_seconds", "equinix_addon_hardware_events_forwarded_total"} {
			if len(gauge(t, name, "hh-node")) > 0 {
				return false
			}
		}
		return true
	}, time.Minute, "the node's series stayed after its inventory went")
}

// An IPMI BMC's sensors say the same through their SDR: a drive slot's
// Predictive Failure, then a temperature past its critical threshold, each
// on the node's condition and metrics, and back.
func TestIPMIThresholdsAndDrivePredictionSignals(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: bmcUser, Password: ipmiPassword})
	env := newEnv(t)
	env.CreateReadyNode("ipmi-hh")
	env.CreateBMCSecret("ipmi-hh", bmcUser, ipmiPassword)
	env.CreateInventory(framework.IPMIInventory("ipmi-hh", sim.Host, sim.Port))
	waitCondition := func(status corev1.ConditionStatus, reason, message, why string) {
		t.Helper()
		env.Eventually(func() bool {
			c := hardwareHealthy(t, env, "ipmi-hh")
			return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, message)
		}, time.Minute, "%s", why)
	}
	waitCondition(corev1.ConditionTrue, equinixv1.ReasonHardwareOK, "OK as the BMC reports", "the node did not get HardwareHealthy=True")

	require.NoError(t, sim.SetSensorBit(ipmisim.SensorDrive, 2, true)) // Predictive Failure
	waitCondition(corev1.ConditionFalse, equinixv1.ReasonFailurePredicted, "Storage: Drive 0: Warning, failure predicted",
		"the drive slot's prediction is not on the node")
	assert.Equal(t, 1.0, gauge(t, "equinix_addon_hardware_predicted_failures", "ipmi-hh")["Storage"])

	require.NoError(t, sim.SetSensorValue(ipmisim.SensorCPUTemp, 0x60)) // 96: past critical 95
	waitCondition(corev1.ConditionFalse, equinixv1.ReasonHardwareCritical, "Thermal: CPU1 Temp: Critical",
		"the temperature past its critical threshold is not on the node")
	assert.Equal(t, 3.0, gauge(t, "equinix_addon_hardware_health", "ipmi-hh")["Thermal"])

	require.NoError(t, sim.SetSensorValue(ipmisim.SensorCPUTemp, 0x2d))
	require.NoError(t, sim.SetSensorBit(ipmisim.SensorDrive, 2, false))
	waitCondition(corev1.ConditionTrue, equinixv1.ReasonHardwareOK, "OK as the BMC reports", "HardwareHealthy did not recover")
	assert.Equal(t, 0.0, gauge(t, "equinix_addon_hardware_predicted_failures", "ipmi-hh")["Storage"])
}

// hardwareHealthy is the node's HardwareHealthy condition, nil when none.
func hardwareHealthy(t *testing.T, env *framework.Env, name string) *corev1.NodeCondition {
	t.Helper()
	for _, c := range node(t, env, name).Status.Conditions {
		if c.Type == equinixv1.NodeHardwareHealthy {
			return &c
		}
	}
	return nil
}

// gauge reads the in-process controller's series of metric name about
// node, by their other label's value (subsystem or type; "" when none).
func gauge(t *testing.T, name, node string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registerer().(prometheus.Gatherer).Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			other, ours := "", node == "" // a series without a node label is asked for by ""
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "node":
					ours = l.GetValue() == node
				default:
					other = l.GetValue()
				}
			}
			if !ours {
				continue
			}
			switch {
			case m.GetGauge() != nil:
				out[other] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[other] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}
