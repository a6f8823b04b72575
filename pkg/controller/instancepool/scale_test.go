package instancepool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// During a rollout the pool keeps one server more than count, for a server of
// the new template; old servers beyond count leave first. Found by the fault
// campaign: a pool scaled from 3 to 1 while two old servers remained
// kept both, so no new server was created and the rollout never ended.
func TestTargetSize(t *testing.T) {
	cases := []struct {
		name            string
		count, outdated int
		rolling         bool
		want            int
	}{
		{name: "no rollout", count: 3, outdated: 0, want: 3},
		{name: "rollout starts: surge one", count: 3, outdated: 3, rolling: true, want: 4},
		{name: "rollout half way", count: 3, outdated: 1, rolling: true, want: 4},
		{name: "count lowered below the old servers: remove old first", count: 1, outdated: 2, rolling: true, want: 1},
		{name: "count lowered to the old servers: surge again", count: 2, outdated: 2, rolling: true, want: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, targetSize(tc.count, tc.rolling, tc.outdated))
		})
	}
}
