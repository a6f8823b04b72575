package equinixmetal

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// reinstalls remembers the reinstalls this process saw Equinix Metal accept,
// by Instance and by the time of their stored intent. The intent is written
// with the state the call leads to, so nothing in the status tells a sent
// reinstall from one whose call never went out: the process that got the
// answer knows, and one that did not (a restart, a new leader) asks the
// device once.
type reinstalls struct {
	mu       sync.Mutex
	accepted map[types.UID]time.Time
}

func newReinstalls() *reinstalls { return &reinstalls{accepted: map[types.UID]time.Time{}} }

// answer records that the reinstall requested at at was accepted. A nil
// reinstalls (a handler built for a unit test) remembers nothing.
func (r *reinstalls) answer(uid types.UID, at time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.accepted[uid] = at
}

// answered reports whether the reinstall requested at at was seen accepted.
func (r *reinstalls) answered(uid types.UID, at time.Time) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	got, ok := r.accepted[uid]
	return ok && got.Equal(at)
}

// forget drops an Instance that has joined or is gone.
func (r *reinstalls) forget(uid types.UID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.accepted, uid)
}
