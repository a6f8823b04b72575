package instance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestVersionsSkipWhatOwnWritesReplaced(t *testing.T) {
	v := newVersions()
	now := time.Unix(1000, 0)
	v.now = func() time.Time { return now }
	assert.False(t, v.superseded("a", "1"))
	v.wrote("a", "1")
	v.wrote("a", "2")
	assert.True(t, v.superseded("a", "1"), "the cache has not caught up with the first write")
	assert.False(t, v.superseded("a", "3"), "the version the last write made")
	assert.True(t, v.superseded("a", "2"), "a newer version seen by a later chain does not clear the older ones")
	assert.False(t, v.superseded("b", "1"), "other Instances are not affected")
	now = now.Add(versionsKept)
	assert.False(t, v.superseded("a", "1"), "forgotten after a while")
	assert.Empty(t, v.replaced)
}

func TestReinstallsRememberTheAcceptedIntent(t *testing.T) {
	r := newReinstalls()
	at := time.Unix(2000, 0)
	assert.False(t, r.answered("a", at))
	r.answer("a", at)
	assert.True(t, r.answered("a", at))
	assert.False(t, r.answered("a", at.Add(time.Second)), "a later intent is another reinstall")
	r.forget("a")
	assert.False(t, r.answered("a", at))
	var none *reinstalls
	none.answer("a", at)
	assert.False(t, none.answered("a", at))
}
