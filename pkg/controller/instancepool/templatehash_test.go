package instancepool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// A Metal pool's template hash is what it was before pools of servers
// people own existed (else every pool would roll out after an upgrade);
// another selector is another server shape.
func TestTemplateHashOfMetalPoolsUnchangedAndSelectorCounts(t *testing.T) {
	metal := equinixv1.InstanceTemplate{
		BootMode:                 "reinstall",
		InstallDevice:            "/dev/sda",
		ManagementBondingOptions: map[string]string{"mode": "balance-tlb"},
		EquinixMetal: equinixv1.EquinixMetal{
			Plan:                "c3.small.x86",
			Metro:               "SG",
			ManagementInterface: []string{"eth0"},
		},
	}
	metal.NetworkingConfiguration.Type = "hybrid"
	assert.Equal(t, "4c81d77834853234", templateHash(&metal), "the hash before spec.servers")

	a := equinixv1.InstanceTemplate{Servers: &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rack": "a"}}}}
	b := equinixv1.InstanceTemplate{Servers: &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rack": "b"}}}}
	assert.NotEqual(t, templateHash(&a), templateHash(&b))
}

// The boot path says only how a server boots into the installer: pinning
// it rolls no joined server out.
func TestTemplateHashIgnoresTheBootPath(t *testing.T) {
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"rack": "a"}}
	unpinned := equinixv1.InstanceTemplate{Servers: &equinixv1.OwnedServers{Selector: sel}}
	pinned := equinixv1.InstanceTemplate{Servers: &equinixv1.OwnedServers{Selector: sel, BootPath: equinixv1.BootPathVirtualMedia}}
	assert.Equal(t, templateHash(&unpinned), templateHash(&pinned))
	assert.Equal(t, equinixv1.BootPathVirtualMedia, pinned.Servers.BootPath, "the pool's template is left as it is")
	legacy := equinixv1.InstanceTemplate{Servers: &equinixv1.OwnedServers{Selector: sel, BootFirmware: equinixv1.BootFirmwareLegacy}}
	assert.NotEqual(t, templateHash(&unpinned), templateHash(&legacy), "the firmware still rolls out")
}
