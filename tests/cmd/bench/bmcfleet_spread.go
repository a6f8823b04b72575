package main

import (
	"math"
	"time"
)

// pollSpread is how a window's polls fall into its seconds.
type pollSpread struct {
	polls   int
	seconds float64
	// busiest is the most polls that began within one second.
	busiest   int
	busiestAt time.Time
}

// spreadOf counts the polls that began in [from, to) by whole second of
// the window.
func spreadOf(starts []time.Time, from, to time.Time) pollSpread {
	s := pollSpread{seconds: to.Sub(from).Seconds()}
	bins := map[int64]int{}
	for _, t := range starts {
		if t.Before(from) || !t.Before(to) {
			continue
		}
		s.polls++
		sec := int64(t.Sub(from) / time.Second)
		bins[sec]++
		if bins[sec] > s.busiest {
			s.busiest, s.busiestAt = bins[sec], from.Add(time.Duration(sec)*time.Second)
		}
	}
	return s
}

// even is the polls of a second when they spread evenly over the window.
func (s pollSpread) even() float64 {
	if s.seconds <= 0 {
		return 0
	}
	return float64(s.polls) / s.seconds
}

// share is the busiest second's share of the window's polls.
func (s pollSpread) share() float64 {
	if s.polls == 0 {
		return 0
	}
	return float64(s.busiest) / float64(s.polls)
}

// bound is the most polls one second may hold without a burst: three
// times the even spread's, and never below three (phases drawn at random
// put a few polls into one second now and then even when the mean is far
// below one).
func (s pollSpread) bound() int {
	return max(3, int(math.Ceil(3*s.even())))
}
