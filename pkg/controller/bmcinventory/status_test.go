package bmcinventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

// A BMC that fails is tried again after the poll interval, at most a
// minute; one that refuses the credentials waits at least a minute whatever
// the poll interval, then as long as it has refused them, up to 30 minutes
// (or the poll interval, if longer).
func TestBMCRetryAfter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	refused := bmcdriver.Observation{Problem: &failure.Error{Seam: bmc.Seam, Class: failure.Unauthorized}}
	down := bmcdriver.Observation{Problem: &failure.Error{Seam: bmc.Seam, Class: failure.Unreachable}}
	since := func(d time.Duration) *target {
		inv := &v1.BMCInventory{}
		inv.Status.Conditions = []metav1.Condition{{Type: v1.BMCAuthenticated, Status: metav1.ConditionFalse,
			LastTransitionTime: metav1.NewTime(now.Add(-d))}}
		return (&Handler{}).newTarget(inv)
	}
	r := &run{now: now}
	for _, c := range []struct {
		name     string
		t        *target
		o        bmcdriver.Observation
		interval time.Duration
		want     time.Duration
	}{
		{"unreachable, long interval", since(0), down, 15 * time.Minute, time.Minute},
		{"unreachable, short interval", since(0), down, 5 * time.Second, 5 * time.Second},
		{"refused just now", since(0), refused, 15 * time.Minute, time.Minute},
		{"refused just now, 5s polls", since(0), refused, 5 * time.Second, time.Minute},
		{"refused for 20s, 5s polls", since(20 * time.Second), refused, 5 * time.Second, time.Minute},
		{"refused for 3 minutes, 5s polls", since(3 * time.Minute), refused, 5 * time.Second, 3 * time.Minute},
		{"refused for 10 minutes", since(10 * time.Minute), refused, 15 * time.Minute, 10 * time.Minute},
		{"refused for hours", since(5 * time.Hour), refused, 15 * time.Minute, 30 * time.Minute},
		{"refused for hours, daily polls", since(5 * time.Hour), refused, 24 * time.Hour, time.Minute * 60 * 5},
	} {
		assert.Equal(t, c.want, r.bmcRetryAfter(c.t, c.o, c.interval), c.name)
	}
}

// Of several inventories of one node, the oldest keeps it (by name when
// made in the same second); one being deleted keeps nothing.
func TestOldestInventoryKeepsTheNode(t *testing.T) {
	at := func(name string, s int64, deleting bool) *v1.BMCInventory {
		i := &v1.BMCInventory{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(s, 0)}}
		if deleting {
			now := metav1.Unix(s+100, 0)
			i.DeletionTimestamp = &now
		}
		return i
	}
	assert.Nil(t, oldest(nil))
	assert.Equal(t, "b", oldest([]*v1.BMCInventory{at("c", 20, false), at("b", 10, false), at("a", 10, true)}).Name)
	assert.Equal(t, "a", oldest([]*v1.BMCInventory{at("b", 10, false), at("a", 10, false)}).Name)
}
