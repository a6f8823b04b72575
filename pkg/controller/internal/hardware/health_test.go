package hardware

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

func health(subs ...machine.SubsystemHealth) machine.Health {
	return machine.Health{Subsystems: subs}
}

func sub(name string, st machine.HealthState, msg string, predicted int) machine.SubsystemHealth {
	return machine.SubsystemHealth{Subsystem: name, State: st, Message: msg, Predicted: predicted}
}

func TestHealthCondition(t *testing.T) {
	unreachable := &failure.Error{Class: failure.Unreachable, Message: "connection refused: nothing listens on that port"}
	refused := &failure.Error{Class: failure.Unauthorized, Message: "the BMC refused the credentials"}
	for name, tc := range map[string]struct {
		h      machine.Health
		polled bool
		link   machine.Link
		want   *corev1.NodeCondition
	}{
		"every reported part OK": {
			h: health(sub("Thermal", machine.HealthOK, "3 of 3 OK", 0), sub("Memory", machine.HealthUnknown, "not reported by the BMC", 0),
				sub("Storage", machine.HealthOK, "2 of 2 OK", 0)),
			polled: true,
			want: &corev1.NodeCondition{Status: corev1.ConditionTrue, Reason: equinixv1.ReasonHardwareOK,
				Message: "OK as the BMC reports: Thermal, Storage; not reported: Memory"},
		},
		"a predicted drive failure": {
			h:      health(sub("Thermal", machine.HealthOK, "3 of 3 OK", 0), sub("Storage", machine.HealthWarning, "Disk 1: Warning, failure predicted", 1)),
			polled: true,
			want: &corev1.NodeCondition{Status: corev1.ConditionFalse, Reason: equinixv1.ReasonFailurePredicted,
				Message: "Storage: Disk 1: Warning, failure predicted"},
		},
		"a warning": {
			h:      health(sub("Fans", machine.HealthWarning, "Fan 3: Warning", 0)),
			polled: true,
			want:   &corev1.NodeCondition{Status: corev1.ConditionFalse, Reason: equinixv1.ReasonHardwareDegraded, Message: "Fans: Fan 3: Warning"},
		},
		"critical wins over a prediction, and every failing part is named": {
			h: health(sub("PowerSupplies", machine.HealthCritical, "PSU 2: Critical", 0),
				sub("Storage", machine.HealthWarning, "Disk 1: Warning, failure predicted", 1)),
			polled: true,
			want: &corev1.NodeCondition{Status: corev1.ConditionFalse, Reason: equinixv1.ReasonHardwareCritical,
				Message: "PowerSupplies: PSU 2: Critical; Storage: Disk 1: Warning, failure predicted"},
		},
		"no part reported": {
			h:      health(sub("Thermal", machine.HealthUnknown, "not reported by the BMC", 0), sub("Storage", machine.HealthUnknown, "not reported by the BMC", 0)),
			polled: true,
			want: &corev1.NodeCondition{Status: corev1.ConditionUnknown, Reason: equinixv1.ReasonHardwareNotReported,
				Message: "the BMC reports the health of no part"},
		},
		"an unreachable BMC": {
			link: machine.Link{Tried: true, Problem: unreachable},
			want: &corev1.NodeCondition{Status: corev1.ConditionUnknown, Reason: equinixv1.ReasonBMCUnreachable,
				Message: "the BMC could not be read: connection refused: nothing listens on that port"},
		},
		"refused credentials": {
			link: machine.Link{Tried: true, Reachable: true, Problem: refused},
			want: &corev1.NodeCondition{Status: corev1.ConditionUnknown, Reason: equinixv1.ReasonAuthenticationFailed,
				Message: "the BMC could not be read: the BMC refused the credentials"},
		},
		"no poll due: nothing new":   {link: machine.Link{Tried: true, Reachable: true, Authenticated: true}},
		"nothing tried: nothing new": {},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := healthCondition(tc.h, tc.polled, tc.link)
			if tc.want == nil {
				assert.False(t, ok)
				return
			}
			tc.want.Type = equinixv1.NodeHardwareHealthy
			assert.True(t, ok)
			assert.Equal(t, *tc.want, got)
		})
	}
}

// A target's series go when it goes, and when it names another node.
func TestHealthSeriesFollowTheTarget(t *testing.T) {
	n := newHealthNodes()
	at := time.Unix(1_800_000_000, 0)
	metrics.HardwareHealth.WithLabelValues("node-a", "Storage").Set(2)
	metrics.BMCReachable.WithLabelValues("node-a").Set(1)
	metrics.EventsForwarded.WithLabelValues("node-a", "Warning").Inc()
	assert.Equal(t, at, n.bind("inv", "node-a", at))
	assert.Equal(t, at, n.bind("inv", "node-a", at.Add(time.Minute)), "since the first")
	assert.Equal(t, 1, testutil.CollectAndCount(metrics.BMCReachable))

	assert.Equal(t, at.Add(time.Hour), n.bind("inv", "node-b", at.Add(time.Hour)))
	metrics.BMCReachable.WithLabelValues("node-b").Set(1)
	assert.Equal(t, 0, testutil.CollectAndCount(metrics.HardwareHealth), "node-a's series went")
	assert.Equal(t, 0, testutil.CollectAndCount(metrics.EventsForwarded))
	assert.Equal(t, 1, testutil.CollectAndCount(metrics.BMCReachable))

	n.forget("inv")
	assert.Equal(t, 0, testutil.CollectAndCount(metrics.BMCReachable))
}
