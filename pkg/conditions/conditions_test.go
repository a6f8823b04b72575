package conditions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSet(t *testing.T) {
	var conds []metav1.Condition
	assert.True(t, True(&conds, 1, "Ready", "Joined", "node joined"))
	first := Get(conds, "Ready").LastTransitionTime

	assert.False(t, True(&conds, 2, "Ready", "Joined", "node joined"), "same status, reason and message is no change")
	assert.Equal(t, int64(2), Get(conds, "Ready").ObservedGeneration, "generation still follows the object")
	assert.Equal(t, first, Get(conds, "Ready").LastTransitionTime)

	assert.True(t, True(&conds, 2, "Ready", "Joined", "node rejoined"), "a new message is a change")
	assert.True(t, False(&conds, 2, "Ready", "", "lost"))
	assert.Equal(t, "False", Get(conds, "Ready").Reason, "an empty reason becomes the status, since the API requires one")
	assert.True(t, IsFalse(conds, "Ready"))
	assert.False(t, IsTrue(conds, "Ready"))
	assert.True(t, Remove(&conds, "Ready"))
	assert.Nil(t, Get(conds, "Ready"))
}
