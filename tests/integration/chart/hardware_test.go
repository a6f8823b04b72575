package chart

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	harvesterv1beta1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// vapServed is what a Kubernetes 1.30 or later cluster's discovery tells
// Helm (helm template, without a cluster, does not tell it).
var vapServed = []string{"--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"}

var (
	hardwareMode   = []string{"--set", "mode=hardware"}
	ownedPoolsMode = []string{"--set", "mode=hardware", "--set", "ownedPools.enabled=true"}
)

// TestRenderHardwareMode: the hardware mode renders none of the Equinix
// kinds' CRDs or Services, a leader Lease of its own, the hardware chains'
// RBAC only, and the Inventory namespace policy.
func TestRenderHardwareMode(t *testing.T) {
	m, _ := render(t, append(slices.Clone(hardwareMode), vapServed...)...)
	assert.Empty(t, m.ofKind("CustomResourceDefinition"), "the Equinix CRDs belong to the equinix mode's release")
	assert.Nil(t, m.find("Service", releaseName+"-ipxe"), "nothing is provisioned over iPXE")
	c := controllerContainer(t, deployment(t, m))
	for _, p := range c.Ports {
		assert.NotEqual(t, "ipxe", p.Name, "the hardware mode serves no iPXE script")
	}
	assert.Equal(t, "hardware", envValue(c, "MODE"))
	assert.Equal(t, releaseName+"-hardware", envValue(c, "LEADER_LOCK_NAME"))

	equinix, _ := render(t, vapServed...)
	assert.Equal(t, "equinix", envValue(controllerContainer(t, deployment(t, equinix)), "MODE"))
	assert.Equal(t, releaseName, envValue(controllerContainer(t, deployment(t, equinix)), "LEADER_LOCK_NAME"),
		"the equinix mode keeps the Lease it always had")
	assert.Nil(t, equinix.find("ValidatingAdmissionPolicy", releaseName+"-inventory-namespace"),
		"the equinix mode serves no Inventory, so it polices none")

	policy := typed[admissionv1.ValidatingAdmissionPolicy](t, m.find("ValidatingAdmissionPolicy", releaseName+"-inventory-namespace"))
	require.NotNil(t, policy.Spec.FailurePolicy)
	assert.Equal(t, admissionv1.Fail, *policy.Spec.FailurePolicy)
	require.Len(t, policy.Spec.MatchConstraints.ResourceRules, 1)
	rule := policy.Spec.MatchConstraints.ResourceRules[0]
	assert.Equal(t, []string{"metal.harvesterhci.io"}, rule.APIGroups)
	assert.Equal(t, []string{"inventories"}, rule.Resources, "status writes are not policed")
	assert.ElementsMatch(t, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, rule.Operations)
	require.Len(t, policy.Spec.Validations, 1)
	assert.Equal(t, "object.metadata.namespace == '"+seederv1alpha1.InventoryNamespace+"'", policy.Spec.Validations[0].Expression)
	binding := typed[admissionv1.ValidatingAdmissionPolicyBinding](t, m.find("ValidatingAdmissionPolicyBinding", releaseName+"-inventory-namespace"))
	assert.Equal(t, policy.Name, binding.Spec.PolicyName)
	assert.Equal(t, []admissionv1.ValidationAction{admissionv1.Deny}, binding.Spec.ValidationActions)

	// The boot firmware annotation, which the Inventory's CRD cannot check.
	assert.Nil(t, equinix.find("ValidatingAdmissionPolicy", releaseName+"-inventory-boot-firmware"))
	firmware := typed[admissionv1.ValidatingAdmissionPolicy](t, m.find("ValidatingAdmissionPolicy", releaseName+"-inventory-boot-firmware"))
	require.NotNil(t, firmware.Spec.FailurePolicy)
	assert.Equal(t, admissionv1.Fail, *firmware.Spec.FailurePolicy)
	assert.Equal(t, policy.Spec.MatchConstraints, firmware.Spec.MatchConstraints, "the same Inventory writes, status apart")
	require.Len(t, firmware.Spec.Validations, 2)
	assert.Contains(t, firmware.Spec.Validations[0].Expression, "variables.firmware in ['UEFI', 'Legacy']")
	binding = typed[admissionv1.ValidatingAdmissionPolicyBinding](t, m.find("ValidatingAdmissionPolicyBinding", releaseName+"-inventory-boot-firmware"))
	assert.Equal(t, firmware.Name, binding.Spec.PolicyName)
	assert.Equal(t, []admissionv1.ValidationAction{admissionv1.Deny}, binding.Spec.ValidationActions)
}

// TestNoPolicyBeforeKubernetes130: a cluster that does not serve
// ValidatingAdmissionPolicy v1 (Kubernetes before 1.30) gets no policy,
// which it would refuse, failing the whole install; the controller's
// WrongNamespace condition still answers there. Before the fix the chart
// rendered it whatever the cluster served.
func TestNoPolicyBeforeKubernetes130(t *testing.T) {
	m, _ := render(t, append(slices.Clone(hardwareMode), "--kube-version", "1.29.0")...)
	assert.Nil(t, m.find("ValidatingAdmissionPolicy", releaseName+"-inventory-namespace"))
	assert.Nil(t, m.find("ValidatingAdmissionPolicyBinding", releaseName+"-inventory-namespace"))
	assert.NotNil(t, m.find("Deployment", releaseName), "the rest installs")
}

// TestHardwareModeRBAC is the whole of what the hardware mode may do: the
// hardware chains' objects and its Lease, and Secrets by name only.
func TestHardwareModeRBAC(t *testing.T) {
	m, _ := render(t, hardwareMode...)
	rules := rbacRules(t, m)
	assert.ElementsMatch(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"metal.harvesterhci.io"}, Resources: []string{"inventories"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"metal.harvesterhci.io"}, Resources: []string{"inventories/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			ResourceNames: []string{"inventories.metal.harvesterhci.io", "machines.bmc.tinkerbell.org"}, Verbs: []string{"get"}},
		// Taking over from Seeder: its finalizer (a JSON patch), the CRD's
		// schema, its orphaned webhook, each by name where RBAC can.
		{APIGroups: []string{"metal.harvesterhci.io"}, Resources: []string{"inventories"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			ResourceNames: []string{"inventories.metal.harvesterhci.io"}, Verbs: []string{"update"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"},
			ResourceNames: []string{seederv1alpha1.SeederWebhookName}, Verbs: []string{"get", "delete"}},
	}, rules["ClusterRole"])
	assert.ElementsMatch(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{releaseName + "-hardware"}, Verbs: []string{"get", "update"}},
		// Seeder running or not (its Lease), its webhook served or not
		// (its Service's slices), and the Addon Harvester's upgrade rewrites.
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{seederv1alpha1.SeederLeaseName}, Verbs: []string{"get"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list"}},
		{APIGroups: []string{"harvesterhci.io"}, Resources: []string{"addons"}, ResourceNames: []string{seederv1alpha1.SeederAddonName}, Verbs: []string{"get", "patch"}},
	}, rules["Role"], "no Metal Secret, ConfigMap or ledger")
	assertBoundToServiceAccount(t, m)
}

func readSeederAddonExample(t *testing.T) *harvesterv1beta1.Addon {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "examples", "seeder-addon.yaml"))
	require.NoError(t, err)
	a := &harvesterv1beta1.Addon{}
	require.NoError(t, yaml.UnmarshalStrict(raw, a))
	return a
}

// TestSeederAddonExample: the manifest points Harvester's own
// harvester-seeder Addon (the only one its UI and node actions honour) at the
// project's repository, the chart's version and the hardware mode with
// the pools of servers you own.
func TestSeederAddonExample(t *testing.T) {
	a := readSeederAddonExample(t)
	assert.Equal(t, seederv1alpha1.SeederAddonName, a.Name)
	assert.Equal(t, seederv1alpha1.SeederAddonNamespace, a.Namespace)
	assert.Equal(t, "true", a.Labels["addon.harvesterhci.io/experimental"], "as Harvester's own, which its webhook lets be deleted")
	assert.Equal(t, "harvester-seeder", a.Spec.Chart, "Harvester's webhook refuses a change of an Addon's chart")
	assert.Equal(t, chartRepoURL, a.Spec.Repo)
	_, equinix := readAddonExample(t)
	assert.Equal(t, equinix.Spec.Version, a.Spec.Version, "both install the chart of one release")
	assert.NotEqual(t, equinix.Spec.Chart, a.Spec.Chart, "Harvester's webhook refuses two Addons with one chart")
	assert.True(t, a.Spec.Enabled, "the UI shows Out-of-Band Access only while it is enabled")

	values := map[string]interface{}{}
	require.NoError(t, yaml.Unmarshal([]byte(a.Spec.ValuesContent), &values))
	assert.Equal(t, "seeder", values["mode"])
	for _, seederOnly := range []string{"image", "fullnameOverride", "embeddedMode"} {
		assert.NotContains(t, values, seederOnly, "valuesContent replaces Seeder's whole")
	}
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, []byte(a.Spec.ValuesContent), 0o600))
	m, _ := render(t, "--values", valuesFile)
	assert.Equal(t, "seeder", envValue(controllerContainer(t, deployment(t, m)), "MODE"))
	assert.Equal(t, "true", envValue(controllerContainer(t, deployment(t, m)), "OWNED_POOLS"), "the pools of servers you own are on")
	var crds []string
	for _, crd := range m.ofKind("CustomResourceDefinition") {
		crds = append(crds, crd.GetName())
	}
	assert.ElementsMatch(t, []string{"instancepools.equinix.harvesterhci.io", "instances.equinix.harvesterhci.io"}, crds,
		"the pools' CRDs only: the Inventory CRD is in crds/, the Elastic IP kinds are the equinix mode's")
}

// TestModesNeverTemplateTheSameObject: the two modes, installed as two
// releases, template no cluster-scoped object of the same name (Helm would
// refuse the second install), and the Inventory CRD is in crds/, which no
// release owns.
func TestModesNeverTemplateTheSameObject(t *testing.T) {
	equinix, _ := render(t)
	hardware := func() manifests {
		out, err := runHelm(t, "template", "harvester-seeder", chartDir(t), "--namespace", releaseNamespace, "--set", "mode=hardware")
		require.NoError(t, err)
		m, err := parseManifests(out)
		require.NoError(t, err)
		return m
	}()
	key := func(o interface {
		GetKind() string
		GetName() string
		GetNamespace() string
	}) string {
		return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	var names []string
	for _, o := range equinix {
		names = append(names, key(o))
	}
	for _, o := range hardware {
		assert.False(t, slices.Contains(names, key(o)), "both releases template %s", key(o))
	}
	for _, o := range append(equinix, hardware...) {
		if o.GetKind() == "CustomResourceDefinition" {
			assert.NotEqual(t, "inventories.metal.harvesterhci.io", o.GetName(), "the Inventory CRD must not be templated")
		}
	}
	_, err := os.Stat(filepath.Join(chartDir(t), "crds", "metal.harvesterhci.io_inventories.yaml"))
	require.NoError(t, err)
}

// TestHardwareModeWithOwnedPools: the pools of servers you own add the
// pool and Instance CRDs (unless the equinix mode's release owns them),
// the iPXE Service of the boot endpoint, and the pool chains' RBAC.
func TestHardwareModeWithOwnedPools(t *testing.T) {
	m, _ := render(t, ownedPoolsMode...)
	var crds []string
	for _, o := range m.ofKind("CustomResourceDefinition") {
		crds = append(crds, o.GetName())
	}
	assert.ElementsMatch(t, []string{"instancepools.equinix.harvesterhci.io", "instances.equinix.harvesterhci.io"}, crds)
	assert.NotNil(t, m.find("Service", releaseName+"-ipxe"), "the boot endpoint is served")
	c := controllerContainer(t, deployment(t, m))
	assert.Equal(t, "true", envValue(c, "OWNED_POOLS"))
	rules := rbacRules(t, m)
	// Every replica serves the boot endpoint, a standby by forwarding to
	// the leader it reads from the leader Lease: nothing on pods in the
	// release's namespace (Harvester's own there), and the Lease only as
	// leader election uses it.
	for _, r := range rules["Role"] {
		assert.NotContains(t, r.Resources, "pods", "the Role grants %v on pods", r.Verbs)
		if slices.Contains(r.Resources, "leases") {
			assert.Subset(t, []string{"create", "get", "update"}, r.Verbs, "the Lease is read and written by name only")
		}
	}
	assert.Contains(t, rules["ClusterRole"], rbacv1.PolicyRule{APIGroups: []string{"metal.harvesterhci.io"}, Resources: []string{"inventories"}, Verbs: []string{"update"}},
		"a claim is an update of the Inventory's metadata")
	assert.Contains(t, rules["ClusterRole"], rbacv1.PolicyRule{APIGroups: []string{"equinix.harvesterhci.io"}, Resources: []string{"instances"}, Verbs: []string{"list", "watch", "create", "update", "delete"}})
	assert.Contains(t, rules["Role"], rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "watch", "create", "delete"}})

	// Beside the equinix mode's release, which owns the CRDs, the
	// harvester-seeder release templates nothing of the same name.
	out, err := runHelm(t, append([]string{"template", "harvester-seeder", chartDir(t), "--namespace", releaseNamespace,
		"--set", "ownedPools.installCRDs=false"}, ownedPoolsMode...)...)
	require.NoError(t, err)
	seeder, err := parseManifests(out)
	require.NoError(t, err)
	assert.Empty(t, seeder.ofKind("CustomResourceDefinition"))
	equinix, _ := render(t)
	for _, o := range seeder {
		assert.Nil(t, equinix.find(o.GetKind(), o.GetName()), "both releases would template %s %s", o.GetKind(), o.GetName())
	}
}
