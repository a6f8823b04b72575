package instancepool

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// progressWriteSpacing is the least time between two status writes of a
// pool that only report progress. A pool of ten servers provisioning moves
// a count or a condition's message with nearly every step of every server;
// written at once, that is a dozen writes per pool in the client-side
// limit every controller shares, which paces a large fleet's provisioning.
const progressWriteSpacing = 5 * time.Second

// statusPacing remembers when each pool's status was last written.
type statusPacing struct {
	mu      sync.Mutex
	written map[string]time.Time
}

func newStatusPacing() *statusPacing { return &statusPacing{written: map[string]time.Time{}} }

// hold returns how long the write of a pool's status waits: zero unless
// it only reports progress and the last write is younger than
// progressWriteSpacing.
func (p *statusPacing) hold(pool string, stored, next *equinixv1.InstancePoolStatus, now time.Time) time.Duration {
	if !progressOnly(stored, next) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(0, p.written[pool].Add(progressWriteSpacing).Sub(now))
}

// wrote records a write of the pool's status.
func (p *statusPacing) wrote(pool string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written[pool] = now
}

// forget drops a pool that is gone.
func (p *statusPacing) forget(pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.written, pool)
}

// progressOnly reports whether next differs from stored only in the
// counts and in conditions' messages: no phase, no condition's status or
// reason, no failure bookkeeping and no generation moved.
func progressOnly(stored, next *equinixv1.InstancePoolStatus) bool {
	return equality.Semantic.DeepEqual(milestones(stored), milestones(next))
}

func milestones(st *equinixv1.InstancePoolStatus) equinixv1.InstancePoolStatus {
	out := *st.DeepCopy()
	out.Ready, out.Updated, out.Available, out.PoweredOff = 0, 0, 0, 0
	for i := range out.Conditions {
		out.Conditions[i].Message = ""
		out.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return out
}
