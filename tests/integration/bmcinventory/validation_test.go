package bmcinventory

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

const testPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// The API refuses what a BMCInventory cannot mean, naming the field, before
// any controller sees it; and it fills in the defaults.
func TestValidationRules(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	valid := func() *v1.BMCInventory {
		return &v1.BMCInventory{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "valid-"},
			Spec: v1.BMCInventorySpec{
				NodeName:          "node-1",
				BMC:               v1.BMCEndpoint{Protocol: v1.BMCProtocolRedfish, Host: "10.0.0.5"},
				CredentialsSecret: v1.SecretReference{Name: "bmc-node-1"},
			},
		}
	}
	cases := []struct {
		name string
		edit func(*v1.BMCInventory)
		want string
	}{
		{"unknown protocol", func(i *v1.BMCInventory) { i.Spec.BMC.Protocol = "ssh" }, "spec.bmc.protocol"},
		{"empty host", func(i *v1.BMCInventory) { i.Spec.BMC.Host = "" }, "spec.bmc.host"},
		{"host with scheme", func(i *v1.BMCInventory) { i.Spec.BMC.Host = "https://10.0.0.5" }, "without scheme"},
		{"host with port", func(i *v1.BMCInventory) { i.Spec.BMC.Host = "10.0.0.5:443" }, "put the port in port"},
		{"port too large", func(i *v1.BMCInventory) { i.Spec.BMC.Port = 70000 }, "spec.bmc.port"},
		{"port negative", func(i *v1.BMCInventory) { i.Spec.BMC.Port = -1 }, "spec.bmc.port"},
		{"both CA and skip", func(i *v1.BMCInventory) {
			i.Spec.BMC.CABundle, i.Spec.BMC.InsecureSkipVerify = testPEM, true
		}, "either caBundle or insecureSkipVerify"},
		{"CA bundle not PEM", func(i *v1.BMCInventory) { i.Spec.BMC.CABundle = "not a certificate" }, "PEM"},
		{"TLS settings on IPMI", func(i *v1.BMCInventory) {
			i.Spec.BMC.Protocol, i.Spec.BMC.InsecureSkipVerify = v1.BMCProtocolIPMI, true
		}, "redfish (HTTPS) only"},
		{"no node", func(i *v1.BMCInventory) { i.Spec.NodeName = "" }, "spec.nodeName"},
		{"no Secret", func(i *v1.BMCInventory) { i.Spec.CredentialsSecret.Name = "" }, "spec.credentialsSecret.name"},
		{"poll too fast", func(i *v1.BMCInventory) { i.Spec.PollInterval = &metav1.Duration{Duration: time.Millisecond} }, "pollInterval"},
		{"unknown power state", func(i *v1.BMCInventory) { i.Spec.PowerState = "standby" }, "spec.powerState"},
	}
	for _, c := range cases {
		inv := valid()
		c.edit(inv)
		_, err := env.Client.EquinixV1().BMCInventories().Create(env.Ctx, inv, metav1.CreateOptions{})
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}

	inv := valid()
	inv.Name, inv.GenerateName = "defaults", ""
	created := create(t, env, inv)
	assert.Equal(t, v1.DefaultBMCPollInterval, created.Spec.PollInterval.Duration, "15 minutes by default")
	assert.Equal(t, v1.PowerOn, created.Spec.PowerState, "on by default")
	insecure := valid()
	insecure.Spec.BMC.InsecureSkipVerify = true
	insecure.Spec.NodeName = "node-2"
	_, err := env.Client.EquinixV1().BMCInventories().Create(env.Ctx, insecure, metav1.CreateOptions{})
	require.NoError(t, err, "skipping verification is an explicit opt-in that is allowed")

	patchErr := func(spec map[string]any) error { return patch(t, env, "defaults", spec) }
	err = patchErr(map[string]any{"nodeName": "node-9"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nodeName is fixed")
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, patchErr(map[string]any{"rebootRequestedAt": now.Add(time.Minute).Format(time.RFC3339)}))
	err = patchErr(map[string]any{"rebootRequestedAt": now.Format(time.RFC3339)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rebootRequestedAt only moves forward")

	// kubectl get shows node, protocol, power, health and reachable.
	c := shared.Require(t)
	out, err := exec.Command(filepath.Join(cluster.DefaultBinDir(), "kubectl"), "--kubeconfig", c.Kubeconfig, "get", "bmcinventory", "defaults").CombinedOutput()
	require.NoError(t, err, string(out))
	header := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
	assert.Equal(t, []string{"NAME", "NODE", "PROTOCOL", "POWER", "HEALTH", "REACHABLE", "AGE"}, header)
	assert.Contains(t, string(out), "node-1")
}
