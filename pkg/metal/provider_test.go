package metal

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

const secretToken = "s3cr3t-t0ken-value"

func TestCredentialsNeverPrintTheToken(t *testing.T) {
	creds := Credentials{Token: secretToken, ProjectID: "proj-1"}
	formats := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v", "%10v", "%-20s"}
	for _, f := range formats {
		t.Run(f, func(t *testing.T) {
			for _, v := range []any{creds, &creds, []Credentials{creds}, struct{ C Credentials }{creds}, map[string]Credentials{"a": creds}} {
				out := fmt.Sprintf(f, v)
				assert.NotContains(t, out, secretToken)
				assert.NotContains(t, out, fmt.Sprintf("%x", secretToken))
			}
		})
	}
	assert.Equal(t, "project=proj-1 token=<redacted>", creds.String())
	assert.Equal(t, "project=proj-1 token=<empty>", Credentials{ProjectID: "proj-1"}.String())
	assert.Equal(t, "metal.Credentials{project=proj-1 token=<redacted>}", fmt.Sprintf("%#v", creds))
}

func TestSensitiveNeverPrints(t *testing.T) {
	req := CreateDeviceRequest{Hostname: "node-1", Userdata: "#cloud-config\ntoken: " + secretToken}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		assert.NotContains(t, fmt.Sprintf(f, req), secretToken, f)
		assert.NotContains(t, fmt.Sprintf(f, &req), secretToken, f)
	}
	assert.Contains(t, fmt.Sprintf("%+v", req), "Userdata:<redacted>")
	assert.Equal(t, "", redact.Sensitive("").String())
}

func TestAPIURL(t *testing.T) {
	tests := []struct {
		base    string
		want    string
		wantErr bool
	}{
		{base: "https://api.equinix.com", want: "https://api.equinix.com/metal/v1"},
		{base: "https://api.equinix.com/", want: "https://api.equinix.com/metal/v1"},
		{base: "https://api.equinix.com/metal/v1", want: "https://api.equinix.com/metal/v1"},
		{base: "http://127.0.0.1:8080/metal/v1/", want: "http://127.0.0.1:8080/metal/v1"},
		{base: "http://sim:8080/prefix", want: "http://sim:8080/prefix/metal/v1"},
		{base: "ftp://example.com", wantErr: true},
		{base: "api.equinix.com", wantErr: true},
		{base: "https://user:pw@api.equinix.com", wantErr: true},
		{base: "https://api.equinix.com?x=1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			got, err := apiURL(tt.base)
			if tt.wantErr {
				require.Error(t, err)
				assert.NotContains(t, err.Error(), "pw")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestProviderClientValidation(t *testing.T) {
	p, err := NewProvider(Options{})
	require.NoError(t, err)
	tests := []struct {
		name  string
		creds Credentials
	}{
		{name: "no token", creds: Credentials{ProjectID: "p"}},
		{name: "blank token", creds: Credentials{Token: "  ", ProjectID: "p"}},
		{name: "no project", creds: Credentials{Token: secretToken}},
		{name: "project with a path", creds: Credentials{Token: secretToken, ProjectID: "p/../x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := p.Client(tt.creds)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
			assert.True(t, IsAuth(err))
		})
	}
}

func TestProviderCachesClients(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	p, err := NewProvider(Options{MaxClients: 2, ClientIdleTimeout: time.Hour, Now: clock})
	require.NoError(t, err)
	sp := p.(*sdkProvider)

	a1, err := p.Client(Credentials{Token: "token-a", ProjectID: "p1"})
	require.NoError(t, err)
	again, err := p.Client(Credentials{Token: "token-a", ProjectID: "p1"})
	require.NoError(t, err)
	assert.Same(t, a1, again, "same credentials, same client")

	rotated, err := p.Client(Credentials{Token: "token-b", ProjectID: "p1"})
	require.NoError(t, err)
	assert.NotSame(t, a1, rotated, "a rotated token yields a new client")
	assert.NotSame(t, a1.(*sdkClient).limiter, rotated.(*sdkClient).limiter)

	// Same token, other project: a new client sharing the token's limiter.
	now = now.Add(time.Minute)
	a2, err := p.Client(Credentials{Token: "token-a", ProjectID: "p2"})
	require.NoError(t, err)
	assert.Equal(t, "p2", a2.ProjectID())
	assert.Same(t, a1.(*sdkClient).limiter, a2.(*sdkClient).limiter)

	// MaxClients=2: the least recently used (token-a/p1... used at t0, like
	// token-b/p1) is dropped.
	assert.Len(t, sp.clients, 2)

	// Idle clients go after ClientIdleTimeout.
	now = now.Add(2 * time.Hour)
	_, err = p.Client(Credentials{Token: "token-c", ProjectID: "p3"})
	require.NoError(t, err)
	assert.Len(t, sp.clients, 1)
}

func TestNewProviderRejectsBadBaseURL(t *testing.T) {
	_, err := NewProvider(Options{BaseURL: "not a url"})
	require.Error(t, err)
}

func TestProviderConcurrentClients(t *testing.T) {
	p, err := NewProvider(Options{MaxClients: 3})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			c, err := p.Client(Credentials{Token: fmt.Sprintf("token-%d", i%5), ProjectID: "p"})
			if assert.NoError(t, err) {
				assert.Equal(t, "p", c.ProjectID())
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, len(p.(*sdkProvider).clients), 3)
}
