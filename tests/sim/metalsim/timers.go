package metalsim

import (
	"container/heap"
	"time"
)

// timer is a pending transition. Timers fire lazily: every request and every
// Tick first runs all timers that are due on the simulator's clock, in the
// order they were due, each at its own due time.
type timer struct {
	at   time.Time
	seq  uint64
	fire func(at time.Time)
}

type timerQueue []*timer

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].at.Equal(q[j].at) {
		return q[i].seq < q[j].seq
	}
	return q[i].at.Before(q[j].at)
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *timerQueue) Push(x any)   { *q = append(*q, x.(*timer)) }
func (q *timerQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return t
}

// scheduleLocked runs fire at from+d. Callers hold s.mu.
func (s *Simulator) scheduleLocked(from time.Time, d time.Duration, fire func(at time.Time)) {
	s.timerSeq++
	heap.Push(&s.timers, &timer{at: from.Add(d), seq: s.timerSeq, fire: fire})
}

// advanceLocked fires every timer due at or before now. Timers may schedule
// further timers; those fire in the same pass when they are due too.
func (s *Simulator) advanceLocked(now time.Time) {
	for s.timers.Len() > 0 && !s.timers[0].at.After(now) {
		t := heap.Pop(&s.timers).(*timer)
		t.fire(t.at)
	}
}
