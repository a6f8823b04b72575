package instance

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// versions remembers, per Instance, the resource versions that this
// process's own status writes replaced. The informer cache delivers the
// version a write made some time after the write: a pass that starts in
// between (a requeue, an event of another object) would see the status as it
// was before, and redo what the write recorded — send again a port call
// whose conversion it recorded as under way (port calls are not idempotent),
// read the device and its events to learn whether the reinstall it just sent
// went out, or write a status that can only conflict. Such a pass is
// skipped: the cache's update brings the Instance back. Only this process
// writes Instance status (one leader at a time, whose cache starts from a
// fresh list), so its own writes are the only ones the cache can lag behind.
//
// A replaced version is remembered for versionsKept, far longer than a watch
// takes to deliver a write; it cannot be forgotten when a newer version shows
// up instead, because the chains after the first get the version the first
// wrote, while the cache may still hold an older one.
type versions struct {
	mu       sync.Mutex
	now      func() time.Time
	replaced map[types.UID]map[string]time.Time
}

const versionsKept = time.Minute

func newVersions() *versions {
	return &versions{now: time.Now, replaced: map[types.UID]map[string]time.Time{}}
}

// wrote records that a write replaced version from. A nil versions (a
// handler built for a unit test) remembers nothing.
func (v *versions) wrote(uid types.UID, from string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.replaced[uid] == nil {
		v.replaced[uid] = map[string]time.Time{}
	}
	v.replaced[uid][from] = v.now()
}

// superseded reports whether rv is a version one of this process's writes
// replaced within versionsKept.
func (v *versions) superseded(uid types.UID, rv string) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	for id, rvs := range v.replaced {
		for r, at := range rvs {
			if now.Sub(at) >= versionsKept {
				delete(rvs, r)
			}
		}
		if len(rvs) == 0 {
			delete(v.replaced, id)
		}
	}
	_, ok := v.replaced[uid][rv]
	return ok
}
