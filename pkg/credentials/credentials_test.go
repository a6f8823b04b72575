package credentials

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
)

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "harvester-system", Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestFor(t *testing.T) {
	cache := fakecache.New[*corev1.Secret]("secrets",
		secret("equinix-addon", map[string]string{TokenKey: "tok-default", ProjectKey: " proj-1 \n"}),
		secret("other", map[string]string{TokenKey: "tok-other", ProjectKey: "proj-2"}),
		secret("no-project", map[string]string{TokenKey: "tok"}),
		secret("empty", nil),
	)
	r := NewResolver(cache, "harvester-system", "equinix-addon")
	cases := []struct {
		name       string
		ref        *equinixv1.SecretReference
		project    string
		wantReason string
		wantMsg    string
	}{
		{name: "default secret", ref: nil, project: "proj-1"},
		{name: "named secret", ref: &equinixv1.SecretReference{Name: "other"}, project: "proj-2"},
		{name: "missing secret", ref: &equinixv1.SecretReference{Name: "nope"}, wantReason: equinixv1.ReasonSecretNotFound, wantMsg: "Secret harvester-system/nope not found"},
		{name: "missing project", ref: &equinixv1.SecretReference{Name: "no-project"}, wantReason: equinixv1.ReasonSecretIncomplete, wantMsg: "has no PROJECT_ID"},
		{name: "empty", ref: &equinixv1.SecretReference{Name: "empty"}, wantReason: equinixv1.ReasonSecretIncomplete, wantMsg: "has no METAL_AUTH_TOKEN and no PROJECT_ID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creds, err := r.For(tc.ref)
			if tc.wantReason != "" {
				e, ok := AsError(err)
				require.True(t, ok, "want a credentials.Error, got %v", err)
				assert.Equal(t, tc.wantReason, e.Reason)
				assert.Contains(t, e.Message, tc.wantMsg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.project, creds.ProjectID)
			assert.NotContains(t, fmt.Sprintf("%v %+v %#v %s", creds, creds, creds, creds), "tok-")
		})
	}
}
