package redact

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSensitiveNeverPrints(t *testing.T) {
	type holder struct {
		Name   string
		Secret Sensitive
	}
	h := holder{Name: "n", Secret: "hunter2-secret"}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		assert.NotContains(t, fmt.Sprintf(f, h), "hunter2", f)
		assert.NotContains(t, fmt.Sprintf(f, &h), "hunter2", f)
		assert.NotContains(t, fmt.Sprintf(f, h.Secret), "hunter2", f)
	}
	assert.Contains(t, fmt.Sprintf("%+v", h), "Secret:<redacted>")
	assert.Equal(t, `"<redacted>"`, fmt.Sprintf("%#v", h.Secret))
	assert.Equal(t, "", Sensitive("").String())
	raw, err := json.Marshal(h)
	require.NoError(t, err)
	assert.JSONEq(t, `{"Name":"n","Secret":"<redacted>"}`, string(raw))
	assert.Equal(t, "hunter2-secret", string(h.Secret), "the value itself is there to read")
}

func TestScrub(t *testing.T) {
	assert.Equal(t, "bad password <redacted>, <redacted>", Scrub("bad password pw-1, pw-1", "pw-1"))
	assert.Equal(t, "nothing to hide", Scrub("nothing to hide", ""))
}
