package main

import (
	"testing"
	"time"
)

func TestSpreadOf(t *testing.T) {
	from := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	to := from.Add(10 * time.Second)
	var starts []time.Time
	for i := range 10 {
		starts = append(starts, from.Add(time.Duration(i)*time.Second+100*time.Millisecond))
	}
	// A burst in the fifth second, and polls outside the window.
	for range 4 {
		starts = append(starts, from.Add(4*time.Second+500*time.Millisecond))
	}
	starts = append(starts, from.Add(-time.Second), to)
	s := spreadOf(starts, from, to)
	if s.polls != 14 || s.busiest != 5 || !s.busiestAt.Equal(from.Add(4*time.Second)) {
		t.Fatalf("spread %+v: want 14 polls, 5 in the second at 4s", s)
	}
	if s.even() != 1.4 || s.bound() != 7 {
		t.Fatalf("even %g, bound %d: want 1.4 and 7", s.even(), s.bound())
	}
	if got := s.share(); got < 0.357 || got > 0.358 {
		t.Fatalf("share %g, want 5/14", got)
	}
}

// The bound at the fleet scenario's sizes: 200 and 2,000 polls in ten
// minutes (two 5-minute intervals of 100 and 1,000 nodes).
func TestSpreadBound(t *testing.T) {
	for _, c := range []struct{ polls, want int }{{200, 6}, {2000, 14}, {0, 3}} {
		s := pollSpread{polls: c.polls, seconds: 600}
		if got := s.bound(); got != c.want {
			t.Errorf("%d polls in 600 s: bound %d, want %d", c.polls, got, c.want)
		}
	}
}
