package equinixmetal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

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
