package instancepool

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

type instBuilder struct{ equinixv1.Instance }

func inst(name string, age time.Duration) *instBuilder {
	b := &instBuilder{}
	b.Name = name
	b.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age))
	joined := metav1.NewTime(b.CreationTimestamp.Add(time.Minute))
	b.Status.JoinedAt = &joined
	b.Status.Status = equinixv1.PhaseManaged
	return b
}
func (b *instBuilder) neverJoined() *instBuilder {
	b.Status.JoinedAt = nil
	b.Status.Status = equinixv1.PhaseInstalling
	return b
}
func (b *instBuilder) failed() *instBuilder {
	b.Status.JoinedAt = nil
	b.Status.Status = equinixv1.PhaseFailed
	return b
}
func (b *instBuilder) unhealthy() *instBuilder { b.Status.Status = equinixv1.PhaseUnhealthy; return b }
func (b *instBuilder) marked() *instBuilder {
	b.Annotations = map[string]string{equinixv1.AnnotationDelete: "true"}
	return b
}
func (b *instBuilder) reservation(id string) *instBuilder {
	b.Spec.HardwareReservationID = id
	return b
}
func (b *instBuilder) build() *equinixv1.Instance { return &b.Instance }

func names(insts []*equinixv1.Instance) []string {
	out := make([]string, len(insts))
	for i, x := range insts {
		out[i] = x.Name
	}
	return out
}

func TestScaleDownOrder(t *testing.T) {
	in := []*equinixv1.Instance{
		inst("old-healthy", 10*time.Hour).build(),
		inst("new-healthy", time.Hour).build(),
		inst("sick", 5*time.Hour).unhealthy().build(),
		inst("installing", 2*time.Minute).neverJoined().build(),
		inst("broken", 3*time.Hour).failed().build(),
		inst("chosen", 20*time.Hour).marked().build(),
	}
	got := names(scaleDownOrder(in))
	assert.Equal(t, []string{"chosen", "installing", "broken", "sick", "new-healthy", "old-healthy"}, got)
	assert.Equal(t, "old-healthy", in[0].Name, "the input is not reordered")
}

func TestPickReservation(t *testing.T) {
	pool := &equinixv1.InstancePool{Spec: equinixv1.InstancePoolSpec{HardwareReservationIDs: []string{
		"11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"}}}
	assert.Equal(t, "11111111-1111-1111-1111-111111111111", pickReservation(pool, nil))
	used := []*equinixv1.Instance{inst("a", 0).reservation("11111111-1111-1111-1111-111111111111").build()}
	assert.Equal(t, "22222222-2222-2222-2222-222222222222", pickReservation(pool, used))
	used = append(used, inst("b", 0).reservation("22222222-2222-2222-2222-222222222222").build())
	assert.Equal(t, "", pickReservation(pool, used), "beyond the list servers are on demand")
	pool.Spec.HardwareReservationIDs = append(pool.Spec.HardwareReservationIDs, "next-available")
	assert.Equal(t, "next-available", pickReservation(pool, used))
	used = append(used, inst("c", 0).reservation("next-available").build())
	assert.Equal(t, "next-available", pickReservation(pool, used), "next-available can be used any number of times")
}

func TestTemplateHash(t *testing.T) {
	base := equinixv1.InstanceTemplate{
		BootMode: equinixv1.BootModeReinstall,
		EquinixMetal: equinixv1.EquinixMetal{
			Plan:                "c3.small.x86",
			Metro:               "SG",
			ManagementInterface: []string{"eth0"},
			NetworkingConfiguration: equinixv1.NetworkingConfiguration{Type: equinixv1.NetworkTypeHybrid,
				InterfaceConfiguration: []equinixv1.InterfaceConfiguration{{Name: "eth1", VLANIDs: []string{"1000"}}}},
		},
	}
	h := templateHash(&base)

	vlans := *base.DeepCopy()
	vlans.NetworkingConfiguration.InterfaceConfiguration[0].VLANIDs = []string{"1000", "1001"}
	vlans.Tags = []string{"team=a"}
	vlans.SSHKeys = []string{"ssh-ed25519 AAAA"}
	assert.Equal(t, h, templateHash(&vlans), "VLANs, tags and SSH keys do not need new servers")

	metro := *base.DeepCopy()
	metro.Metro = "sg"
	assert.Equal(t, h, templateHash(&metro), "metro case does not matter")

	for name, mutate := range map[string]func(*equinixv1.InstanceTemplate){
		"plan":    func(t *equinixv1.InstanceTemplate) { t.Plan = "m3.large.x86" },
		"network": func(t *equinixv1.InstanceTemplate) { t.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer3 },
		"bond":    func(t *equinixv1.InstanceTemplate) { t.ManagementBondingOptions = map[string]string{"mode": "802.3ad"} },
		"ports":   func(t *equinixv1.InstanceTemplate) { t.ManagementInterface = []string{"eth0", "eth2"} },
	} {
		changed := *base.DeepCopy()
		mutate(&changed)
		assert.NotEqual(t, h, templateHash(&changed), name+" needs new servers")
	}
}

func TestInstanceName(t *testing.T) {
	n, err := instanceName("harvester-pxe-worker")
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^harvester-pxe-worker-[a-z]{8}$`), n)
}
