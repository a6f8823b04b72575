package harvester

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReleaseCheckerAnswers(t *testing.T) {
	var heads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heads.Add(1)
		assert.Equal(t, http.MethodHead, r.Method, "the check must not download the ISO")
		switch r.URL.Path {
		case "/v1.4.1.iso":
			w.WriteHeader(http.StatusOK)
		case "/moved.iso":
			http.Redirect(w, r, "/v1.4.1.iso", http.StatusFound)
		case "/denied.iso":
			w.WriteHeader(http.StatusForbidden)
		case "/broken.iso":
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := NewReleaseChecker(nil, 5*time.Second)
	ctx := context.Background()
	cases := []struct {
		path    string
		missing bool
		unknown bool
	}{
		{path: "/v1.4.1.iso"},
		{path: "/moved.iso"},
		{path: "/v9.9.9.iso", missing: true},
		{path: "/denied.iso", missing: true},
		{path: "/broken.iso", unknown: true},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			err := c.Check(ctx, srv.URL+tc.path)
			switch {
			case tc.missing:
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrReleaseMissing), "%v", err)
				assert.Contains(t, err.Error(), tc.path)
			case tc.unknown:
				require.Error(t, err)
				assert.False(t, errors.Is(err, ErrReleaseMissing), "a 5xx says nothing about the release: %v", err)
			default:
				assert.NoError(t, err)
			}
		})
	}
	unreachable := NewReleaseChecker(nil, time.Second).Check(ctx, "http://127.0.0.1:1/x.iso")
	require.Error(t, unreachable)
	assert.False(t, errors.Is(unreachable, ErrReleaseMissing))
}

func TestReleaseCheckerKeepsAnswers(t *testing.T) {
	var heads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		heads.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	c := NewReleaseChecker(nil, 5*time.Second)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	for i := 0; i < 3; i++ {
		require.ErrorIs(t, c.Check(context.Background(), srv.URL+"/a.iso"), ErrReleaseMissing)
	}
	assert.EqualValues(t, 1, heads.Load(), "one HEAD per URL while the answer is fresh")
	now = now.Add(releaseMissingTTL)
	require.ErrorIs(t, c.Check(context.Background(), srv.URL+"/a.iso"), ErrReleaseMissing)
	assert.EqualValues(t, 2, heads.Load(), "a missing release is asked again after a while: it may have been published")
}
