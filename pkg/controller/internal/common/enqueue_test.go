package common

import (
	"testing"
	"time"

	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"github.com/stretchr/testify/assert"
)

type recordingController struct{ calls []string }

func (r *recordingController) EnqueueAfter(name string, d time.Duration) {
	r.calls = append(r.calls, name+"@"+d.String())
}

func TestAfterEnqueuesWithAFixedDelay(t *testing.T) {
	rec := &recordingController{}
	var enq relatedresource.ClusterScopedEnqueuer = After(rec, time.Second)
	enq.Enqueue("pool-a")
	enq.Enqueue("pool-a")
	assert.Equal(t, []string{"pool-a@1s", "pool-a@1s"}, rec.calls, "no backoff, however often it is called")
}
