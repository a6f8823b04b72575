package hardware

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// A joined server's Node carries the facts the Metal API gives: the plan as
// the model label (label-safe as Seeder makes it), no manufacturer or
// serial number (the API has none), and the plan's specs from the plans
// API as annotations.
func TestFactsOnTheNode(t *testing.T) {
	env := newEnv(t, framework.Options{})
	_, inst := readyServer(t, env, "facts", nil)

	plans, err := env.MetalClient(framework.MetalToken, framework.ProjectID).ListPlans(env.Ctx)
	require.NoError(t, err)
	var plan metal.Plan
	for _, p := range plans {
		if p.Slug == inst.Spec.Plan {
			plan = p
		}
	}
	require.NotEmpty(t, plan.CPUs)
	require.NotEmpty(t, plan.Drives)
	require.NotEmpty(t, plan.NICs)
	want := map[string]string{
		equinixv1.AnnotationCPUCount: fmt.Sprint(plan.CPUs[0].Count),
		equinixv1.AnnotationCPUs:     fmt.Sprintf("%d x %s", plan.CPUs[0].Count, plan.CPUs[0].Type),
		equinixv1.AnnotationMemory:   plan.Memory,
		equinixv1.AnnotationDrives: fmt.Sprintf("%d x %s %s (%s)", plan.Drives[0].Count, plan.Drives[0].Size, plan.Drives[0].Type,
			plan.Drives[0].Category),
		equinixv1.AnnotationNICs:           fmt.Sprintf("%d x %s", plan.NICs[0].Count, plan.NICs[0].Type),
		equinixv1.AnnotationHardwareSource: "Equinix Metal plan c3.small.x86",
	}
	env.Eventually(func() bool {
		n := node(t, env, inst.Name)
		for k, v := range want {
			if n.Annotations[k] != v {
				return false
			}
		}
		return n.Labels[equinixv1.LabelModel] == "c3smallx86"
	}, time.Minute, "the node did not get its hardware facts")
	n := node(t, env, inst.Name)
	assert.NotContains(t, n.Labels, equinixv1.LabelManufacturer, "the Metal API names no manufacturer")
	assert.NotContains(t, n.Labels, equinixv1.LabelSerialNumber, "the Metal API names no serial number")
	assert.NotContains(t, n.Annotations, equinixv1.AnnotationBIOS)
	env.AssertNoSecretLeaks()
}
