package bgp

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// failedOutcome is what the chain does with a failed Metal call.
type failedOutcome struct {
	Err      string
	Events   []string
	Enqueued []string
}

func TestFailed(t *testing.T) {
	told := func(msg string) []string {
		return []string{"Warning BGPFailed node/web-1: no BGP peering for this node: opening a session: " + msg}
	}
	cases := []struct {
		name     string
		err      error
		expected failedOutcome
	}{
		{name: "refused credentials wait for the resync, told",
			err:      &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 401, Class: failure.Unauthorized, Message: "invalid token"},
			expected: failedOutcome{Events: told("metal CreateBGPSession: 401 Unauthorized: invalid token"), Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a forbidden call waits for the resync, told",
			err:      &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 403, Class: failure.Forbidden},
			expected: failedOutcome{Events: told("metal CreateBGPSession: 403 Forbidden"), Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "a request the user has to fix waits for the resync, told",
			err:      &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 422, Class: failure.Invalid, Message: "BGP sessions need a device with Layer 3 addresses"},
			expected: failedOutcome{Events: told("metal CreateBGPSession: 422 Invalid: BGP sessions need a device with Layer 3 addresses"), Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "no capacity waits for the resync, told",
			err:      &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 503, Class: failure.NoCapacity},
			expected: failedOutcome{Events: told("metal CreateBGPSession: 503 NoCapacity"), Enqueued: []string{"web-1 after 10m0s"}}},
		{name: "throttled: again shortly, nothing told",
			err:      &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 429, Class: failure.Throttled},
			expected: failedOutcome{Events: []string{}, Enqueued: []string{"web-1 after 15s"}}},
		{name: "busy: again shortly, nothing told",
			err:      &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 422, Class: failure.Busy},
			expected: failedOutcome{Events: []string{}, Enqueued: []string{"web-1 after 15s"}}},
		{name: "a transient failure is returned for the workqueue's backoff",
			err: &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 502, Class: failure.Transient},
			expected: failedOutcome{Err: "node web-1: opening a session: metal CreateBGPSession: 502 Transient",
				Events: []string{}, Enqueued: []string{}}},
		{name: "an answer nothing else fits is returned too",
			err: &failure.Error{Seam: metal.Seam, Op: "CreateBGPSession", StatusCode: 302, Class: failure.Unknown},
			expected: failedOutcome{Err: "node web-1: opening a session: metal CreateBGPSession: 302 Unknown",
				Events: []string{}, Enqueued: []string{}}},
		{name: "a failure of the addon's own making waits for the resync, told",
			err:      errors.New("the project's BGP config is disabled"),
			expected: failedOutcome{Events: told("the project's BGP config is disabled"), Enqueued: []string{"web-1 after 10m0s"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes, events := &nodeController{}, &eventLog{}
			h := &Handler{settings: Settings{Resync: resync}, nodes: nodes, recorder: events, reported: map[string]string{}}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
			got := failedOutcome{Events: []string{}, Enqueued: []string{}}
			if err := h.failed(node, "opening a session", tc.err); err != nil {
				got.Err = err.Error()
				assert.ErrorIs(t, err, tc.err, "the Metal error stays in the chain")
			}
			got.Events, got.Enqueued = append(got.Events, events.events...), append(got.Enqueued, nodes.enqueued...)
			assert.Equal(t, tc.expected, got)

			// The same problem again is not told twice.
			_ = h.failed(node, "opening a session", tc.err)
			assert.Len(t, events.events, len(tc.expected.Events))
		})
	}
}
