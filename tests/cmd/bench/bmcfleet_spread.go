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

// bound is the most polls one second may hold without a burst: what
// phases drawn at random give. Even then the busiest of many seconds holds
// well above the mean (at 3.3 polls a second, 1,000 phases in a
// 5-minute interval, about 10), so the bound is the count a second reaches
// with a chance of 1% over the whole window, had every poll come at a
// uniformly random time (a Poisson count per second); and at least 3.
func (s pollSpread) bound() int {
	bins := max(1, math.Ceil(s.seconds))
	lambda := s.even()
	// P(X >= k) for X ~ Poisson(lambda), from the terms of its CDF.
	term, below := math.Exp(-lambda), 0.0
	for k := 0; ; k++ {
		if k >= 3 && bins*(1-below) <= 0.01 {
			return k
		}
		below += term
		term *= lambda / float64(k+1)
	}
}
