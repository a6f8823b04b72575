package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

const projectC = "c0000000-0000-4000-8000-00000000000c"

func metros(m ...string) map[string]bool {
	out := map[string]bool{}
	for _, x := range m {
		out[x] = true
	}
	return out
}

var (
	credsA = &metal.Credentials{Token: tokenA, ProjectID: projectA}
	credsB = &metal.Credentials{Token: tokenB, ProjectID: projectB}
)

func TestProjects(t *testing.T) {
	cases := []struct {
		name     string
		given    given
		expected []*project
	}{
		{name: "the default Secret's project is always swept",
			expected: []*project{{id: projectA, creds: credsA, metros: metros(), inUse: true}}},
		{name: "pools and Instances name projects and metros, lowercased",
			given: given{pools: []*equinixv1.InstancePool{poolIn("b", "b", "SV"), poolIn("default", "", "Da")},
				instances: []*equinixv1.Instance{instance("web-1", func(i *equinixv1.Instance) { i.Spec.Metro = "AM" })}},
			expected: []*project{{id: projectA, creds: credsA, metros: metros("am", "da"), inUse: true},
				{id: projectB, creds: credsB, metros: metros("sv"), inUse: true}}},
		{name: "an Instance's recorded project wins over its Secret's",
			given: given{instances: []*equinixv1.Instance{instance("web-1", func(i *equinixv1.Instance) { i.Status.ProjectID = projectB })}},
			expected: []*project{{id: projectA, creds: credsA, metros: metros(), inUse: true},
				{id: projectB, creds: credsB, metros: metros("da"), inUse: true}}},
		{name: "a project only the ledger remembers is found through a labelled Secret naming it",
			given: given{ledger: `{"` + projectB + `":["ny","sv"]}`},
			expected: []*project{{id: projectA, creds: credsA, metros: metros(), inUse: true},
				{id: projectB, creds: credsB, metros: metros("ny", "sv"), recorded: true}}},
		{name: "the credentials a pool uses are not swapped for another Secret's of the same project",
			given: given{pools: []*equinixv1.InstancePool{poolIn("b", "b", "da")}, ledger: `{"` + projectC + `":["da"]}`,
				secrets: []*corev1.Secret{credentialsSecret("c", "token-c", projectC), credentialsSecret("old-b", "revoked-token", projectB)}},
			expected: []*project{{id: projectA, creds: credsA, metros: metros(), inUse: true},
				{id: projectB, creds: credsB, metros: metros("da"), inUse: true},
				{id: projectC, creds: &metal.Credentials{Token: "token-c", ProjectID: projectC}, metros: metros("da"), recorded: true}}},
		{name: "a project no Secret names any more has no credentials",
			given: given{ledger: `{"` + projectC + `":["da"],"` + projectA + `":["sg"]}`},
			expected: []*project{{id: projectA, creds: credsA, metros: metros("sg"), inUse: true, recorded: true},
				{id: projectC, metros: metros("da"), recorded: true}}},
		{name: "an Instance whose Secret is missing names no project",
			given: given{instances: []*equinixv1.Instance{instance("web-1", func(i *equinixv1.Instance) {
				i.Spec.CredentialsSecret, i.Spec.Metro = &equinixv1.SecretReference{Name: "deleted"}, "ny"
			})}},
			expected: []*project{{id: projectA, creds: credsA, metros: metros(), inUse: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.given)
			got, err := w.s.projects(w.insts.cached)
			assert.NoError(t, err)
			assert.Equal(t, tc.expected, got)
		})
	}
}

// vlanOutcome is what a sweep leaves of project A's and B's VLANs by
// metro.
type vlanOutcome struct {
	A, B   map[string][]int
	Events []string
	Err    string
}

func TestSweepCollectsVLANs(t *testing.T) {
	wants := func(vxlans ...string) func(*equinixv1.Instance) {
		return func(i *equinixv1.Instance) {
			i.Spec.NetworkingConfiguration.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{{Name: "eth1", VLANIDs: vxlans}}
		}
	}
	cases := []struct {
		name     string
		given    given
		expected vlanOutcome
	}{
		{name: "an unused VLAN of this cluster is deleted; foreign ones stay",
			given: given{pools: []*equinixv1.InstancePool{poolIn("web", "", "da")},
				vlans: []vlan{{metro: "da", vxlan: 1000, tags: ours()}, {metro: "da", vxlan: 1001},
					{metro: "da", vxlan: 1002, tags: []string{equinixv1.ClusterTag("c2")}}}},
			expected: vlanOutcome{A: map[string][]int{"da": {1001, 1002}, "sg": {}}, B: map[string][]int{"da": {}}, Events: []string{}}},
		{name: "a VLAN an Instance of the project wants stays, even before it is attached",
			given: given{instances: []*equinixv1.Instance{instance("web-1", wants("1000"))},
				vlans: []vlan{{metro: "da", vxlan: 1000, tags: ours()}, {metro: "da", vxlan: 1001, tags: ours()}}},
			expected: vlanOutcome{A: map[string][]int{"da": {1000}, "sg": {}}, B: map[string][]int{"da": {}}, Events: []string{}}},
		{name: "what an Instance of another project wants does not keep a VLAN",
			given: given{pools: []*equinixv1.InstancePool{poolIn("b", "b", "da")},
				instances: []*equinixv1.Instance{instance("web-1", wants("1000")), instance("web-2", wants("1000"), joined(projectA))},
				vlans:     []vlan{{project: projectB, metro: "da", vxlan: 1000, tags: ours()}}},
			expected: vlanOutcome{A: map[string][]int{"da": {}, "sg": {}}, B: map[string][]int{"da": {}}, Events: []string{}}},
		{name: "a metro only the ledger remembers is cleaned too",
			given:    given{ledger: `{"` + projectA + `":["sg"]}`, vlans: []vlan{{metro: "sg", vxlan: 1000, tags: ours()}}},
			expected: vlanOutcome{A: map[string][]int{"da": {}, "sg": {}}, B: map[string][]int{"da": {}}, Events: []string{}}},
		{name: "a metro nothing names is not looked into",
			given:    given{vlans: []vlan{{metro: "sg", vxlan: 1000, tags: ours()}}},
			expected: vlanOutcome{A: map[string][]int{"da": {}, "sg": {1000}}, B: map[string][]int{"da": {}}, Events: []string{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.given)
			got := vlanOutcome{Err: w.sweep(), Events: w.events.list(),
				A: map[string][]int{"da": w.vlans(projectA, "da"), "sg": w.vlans(projectA, "sg")},
				B: map[string][]int{"da": w.vlans(projectB, "da")}}
			assert.Equal(t, tc.expected, got)
		})
	}
}

// A project the ledger remembers is forgotten once nothing of the addon has
// been in it, continuously, for twice the Metal timeout (a create whose
// answer was lost lands within that) and nothing names it.
func TestSweepForgetsAnEmptyProject(t *testing.T) {
	recordedB := `{"` + projectB + `":["da"]}`
	cases := []struct {
		name  string
		given given
		// sweeps run at these times after now; before runs ahead of each.
		sweeps   []time.Duration
		before   map[int]func(*world)
		expected []string // the ledger after each sweep
	}{
		{name: "empty for twice the Metal timeout: forgotten",
			given:    given{ledger: recordedB},
			sweeps:   []time.Duration{0, 2*settle - time.Second, 2 * settle},
			expected: []string{recordedB, recordedB, `{}`}},
		{name: "a project a pool names is never forgotten",
			given:    given{ledger: recordedB, pools: []*equinixv1.InstancePool{poolIn("b", "b", "da")}},
			sweeps:   []time.Duration{0, 3 * settle},
			expected: []string{recordedB, recordedB}},
		{name: "a project holding a device of the addon is kept",
			given:    given{ledger: recordedB, devices: []device{{hostname: "x", project: projectB, tags: ours(), age: time.Minute}}},
			sweeps:   []time.Duration{0, 3 * settle},
			expected: []string{recordedB, recordedB}},
		{name: "a project holding a VLAN an Instance may still want is kept",
			given: given{ledger: recordedB, vlans: []vlan{{project: projectB, metro: "da", vxlan: 1000, tags: ours()}},
				instances: []*equinixv1.Instance{instance("web-1", func(i *equinixv1.Instance) {
					// Its Secret is gone: its project cannot be told.
					i.Spec.CredentialsSecret = &equinixv1.SecretReference{Name: "deleted"}
					i.Spec.NetworkingConfiguration.InterfaceConfiguration = []equinixv1.InterfaceConfiguration{{Name: "eth1", VLANIDs: []string{"1000"}}}
				})}},
			sweeps:   []time.Duration{0, 3 * settle},
			expected: []string{recordedB, recordedB}},
		{name: "emptiness must last: a device seen in between starts the wait again",
			given:  given{ledger: recordedB},
			sweeps: []time.Duration{0, settle, 2 * settle, 3 * settle, 4 * settle},
			before: map[int]func(*world){
				1: func(w *world) {
					d, err := w.client(projectB).CreateDevice(context.Background(), metal.CreateDeviceRequest{Hostname: "late", Plan: "c3.small.x86",
						Metro: "da", OperatingSystem: "ubuntu_22_04", BillingCycle: "hourly", Tags: ours()})
					require.NoError(w.t, err)
					w.ids["late"] = d.ID
				},
				2: func(w *world) { require.NoError(w.t, w.sim.DeleteDeviceOutOfBand(w.ids["late"])) },
			},
			expected: []string{recordedB, recordedB, recordedB, recordedB, `{}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.given)
			var got []string
			for i, at := range tc.sweeps {
				if f := tc.before[i]; f != nil {
					f(w)
				}
				w.clock.Set(now.Add(at))
				assert.Empty(t, w.sweep())
				cm, err := w.cms.Get(namespace, equinixv1.ConfigMapLedger, metav1.GetOptions{})
				require.NoError(t, err)
				got = append(got, cm.Data["projects"])
			}
			assert.Equal(t, tc.expected, got)
		})
	}
}

// The Event about a project no Secret names says which metros to look in.
func TestUnreachableProjectNamesItsMetros(t *testing.T) {
	w := newWorld(t, given{})
	w.s.unreachable(&project{id: projectC, metros: metros("sv", "am")})
	assert.Equal(t, []string{"Warning ProjectUnreachable namespace/harvester-system: the addon made objects in Equinix Metal project " + projectC +
		" (metros am, sv) but no Secret labelled equinix.harvesterhci.io/secret=credentials holds its credentials any more: devices or VLANs left there cannot be found or released until one does"},
		w.events.list())
}
