package chart

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRBACLeastPrivilege: no wildcard anywhere, Secrets never cluster-wide, and
// none of the verbs that hand out more rights than they name.
func TestRBACLeastPrivilege(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "defaults"},
		{name: "every option on", args: []string{"--values", testdata("all-on.yaml")}},
		{name: "hardware mode", args: hardwareMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := render(t, tc.args...)
			hardware := tc.name == "hardware mode"
			rules := rbacRules(t, m)
			require.NotEmpty(t, rules["ClusterRole"])
			require.NotEmpty(t, rules["Role"])
			for kind, rs := range rules {
				for _, r := range rs {
					for _, field := range [][]string{r.Verbs, r.Resources, r.APIGroups, r.ResourceNames, r.NonResourceURLs} {
						assert.NotContains(t, field, "*", "%s rule %+v", kind, r)
					}
					assert.Empty(t, r.NonResourceURLs, "%s rule %+v", kind, r)
					for _, verb := range []string{"escalate", "bind", "impersonate"} {
						assert.NotContains(t, r.Verbs, verb, "%s rule %+v", kind, r)
					}
				}
			}
			for _, r := range rules["ClusterRole"] {
				if !slices.Contains(r.APIGroups, "") || !slices.Contains(r.Resources, "secrets") {
					continue
				}
				// The UI keeps BMC credentials in any namespace: the hardware
				// mode gets each by name, and may neither list nor watch them.
				if hardware {
					assert.Equal(t, []string{"get"}, r.Verbs, "Secrets cluster-wide: get only")
				} else {
					assert.Fail(t, "Secrets are readable only in the release namespace")
				}
			}
			assertBoundToServiceAccount(t, m)
		})
	}
}

func assertBoundToServiceAccount(t *testing.T, m manifests) {
	t.Helper()
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: releaseName, Namespace: releaseNamespace}}
	crb := typed[rbacv1.ClusterRoleBinding](t, m.find("ClusterRoleBinding", releaseName))
	assert.Equal(t, want, crb.Subjects)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: releaseName}, crb.RoleRef)
	rb := typed[rbacv1.RoleBinding](t, m.find("RoleBinding", releaseName))
	assert.Equal(t, want, rb.Subjects)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: releaseName}, rb.RoleRef)
}
