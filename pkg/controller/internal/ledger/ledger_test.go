package ledger

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
)

const namespace = "harvester-system"

// configMaps stands in for the apiserver's ConfigMaps. It counts the writes
// that reach it and can let another worker write first: the next write is
// then refused with a conflict, as a stale resourceVersion would be.
type configMaps struct {
	*fakecache.Store[*corev1.ConfigMap, *corev1.ConfigMapList]
	writes int
	// otherWorker, when set, runs once just before the next write, which it
	// makes conflict.
	otherWorker func(*configMaps)
}

func newConfigMaps(data *string) *configMaps {
	store := fakecache.NewStore[*corev1.ConfigMap, *corev1.ConfigMapList]("configmaps")
	if data != nil {
		_, _ = store.Create(ledgerMap(*data))
	}
	return &configMaps{Store: store}
}

func ledgerMap(data string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: equinixv1.ConfigMapLedger}}
	if data != "-" {
		cm.Data = map[string]string{dataKey: data}
	}
	return cm
}

func (c *configMaps) raced() bool {
	hook := c.otherWorker
	if hook == nil {
		return false
	}
	c.otherWorker = nil
	hook(c)
	return true
}

func (c *configMaps) Create(cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if c.raced() {
		return nil, apierrors.NewAlreadyExists(corev1.Resource("configmaps"), cm.Name)
	}
	c.writes++
	return c.Store.Create(cm)
}

func (c *configMaps) Update(cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if c.raced() {
		return nil, apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, errors.New("the object has been modified"))
	}
	c.writes++
	return c.Store.Update(cm)
}

// stored is the ledger's raw data, "<none>" without a ConfigMap and "-"
// for a ConfigMap without data.
func (c *configMaps) stored(t *testing.T) string {
	t.Helper()
	cm, err := c.Get(namespace, equinixv1.ConfigMapLedger, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "<none>"
	}
	require.NoError(t, err)
	if cm.Data == nil {
		return "-"
	}
	return cm.Data[dataKey]
}

// ledgerOutcome is what a call leaves in the ledger, how many writes it
// cost and its error.
type ledgerOutcome struct {
	Stored string
	Writes int
	Err    string
}

func (c *configMaps) outcome(t *testing.T, err error) ledgerOutcome {
	t.Helper()
	out := ledgerOutcome{Stored: c.stored(t), Writes: c.writes}
	if err != nil {
		out.Err = err.Error()
	}
	return out
}

// otherProjectRecorded is another worker recording project other/ny.
func otherProjectRecorded(c *configMaps) {
	_, _ = c.Store.Create(ledgerMap(`{}`))
	cm, _ := c.Get(namespace, equinixv1.ConfigMapLedger, metav1.GetOptions{})
	cm.Data[dataKey] = `{"other":["ny"]}`
	_, _ = c.Store.Update(cm)
}

func ptr(s string) *string { return &s }

func TestRecord(t *testing.T) {
	cases := []struct {
		name        string
		given       *string // the ledger's data; nil for no ConfigMap
		otherWorker func(*configMaps)
		project     string
		metro       string
		expected    ledgerOutcome
	}{
		{name: "the first create anywhere makes the ConfigMap",
			project: "p1", metro: "DA", expected: ledgerOutcome{Stored: `{"p1":["da"]}`, Writes: 1}},
		{name: "a new project joins the others",
			given: ptr(`{"p0":["sv"]}`), project: "p1", metro: "da", expected: ledgerOutcome{Stored: `{"p0":["sv"],"p1":["da"]}`, Writes: 1}},
		{name: "a new metro of a known project, metros sorted",
			given: ptr(`{"p1":["sv"]}`), project: "p1", metro: "Am", expected: ledgerOutcome{Stored: `{"p1":["am","sv"]}`, Writes: 1}},
		{name: "what is already there costs no write",
			given: ptr(`{"p1":["da"]}`), project: "p1", metro: "DA", expected: ledgerOutcome{Stored: `{"p1":["da"]}`}},
		{name: "a ConfigMap without data gets its key",
			given: ptr("-"), project: "p1", metro: "da", expected: ledgerOutcome{Stored: `{"p1":["da"]}`, Writes: 1}},
		{name: "a ledger it cannot read is never overwritten",
			given: ptr(`{"p0":`), project: "p1", metro: "da", expected: ledgerOutcome{Stored: `{"p0":`,
				Err: "recording project p1, metro da in ConfigMap harvester-system/harvester-equinix-addon-ledger: ConfigMap harvester-system/harvester-equinix-addon-ledger key projects: unexpected end of JSON input"}},
		{name: "another worker's update in between is merged, not lost",
			given: ptr(`{}`), otherWorker: otherProjectRecorded, project: "p1", metro: "da",
			expected: ledgerOutcome{Stored: `{"other":["ny"],"p1":["da"]}`, Writes: 1}},
		{name: "another worker's create in between is merged, not lost",
			otherWorker: otherProjectRecorded, project: "p1", metro: "da",
			expected: ledgerOutcome{Stored: `{"other":["ny"],"p1":["da"]}`, Writes: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cms := newConfigMaps(tc.given)
			cms.otherWorker = tc.otherWorker
			err := New(cms, namespace).Record(tc.project, tc.metro)
			assert.Equal(t, tc.expected, cms.outcome(t, err))
		})
	}
}

// Only the first create in a project and metro costs a read and a write:
// every later one is answered from memory, until the project is forgotten,
// when the next create there records it again.
func TestRecordRemembersWhatItStored(t *testing.T) {
	cms := newConfigMaps(nil)
	l := New(cms, namespace)
	require.NoError(t, l.Record("p1", "da"))
	require.NoError(t, l.Record("p1", "sv"))

	// Someone empties the ConfigMap by hand: the process's memory still
	// answers, so no write happens.
	cm, err := cms.Get(namespace, equinixv1.ConfigMapLedger, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data[dataKey] = `{}`
	_, err = cms.Store.Update(cm)
	require.NoError(t, err)
	require.NoError(t, l.Record("p1", "DA"))
	assert.Equal(t, 2, cms.writes)
	assert.Equal(t, `{}`, cms.stored(t))

	require.NoError(t, l.Forget("p1"))
	require.NoError(t, l.Record("p1", "da"))
	assert.Equal(t, 3, cms.writes)
	assert.Equal(t, `{"p1":["da"]}`, cms.stored(t))
}

func TestEntries(t *testing.T) {
	cases := []struct {
		name     string
		given    *string
		expected Entries
		err      string
	}{
		{name: "no ConfigMap yet: nothing recorded", expected: Entries{}},
		{name: "a ConfigMap without data", given: ptr("-"), expected: Entries{}},
		{name: "projects and their metros", given: ptr(`{"p2":["da"],"p1":["am","sv"]}`),
			expected: Entries{"p1": {"am", "sv"}, "p2": {"da"}}},
		{name: "unreadable data is an error, not an empty ledger", given: ptr(`["p1"]`),
			err: "ConfigMap harvester-system/harvester-equinix-addon-ledger key projects: json: cannot unmarshal array into Go value of type ledger.Entries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(newConfigMaps(tc.given), namespace).Entries()
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.expected, got)
		})
	}
}

func TestEntriesProjects(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c"}, Entries{"c": nil, "a": {"da"}, "b": {}}.Projects())
	assert.Equal(t, []string{}, Entries{}.Projects())
}

func TestForget(t *testing.T) {
	cases := []struct {
		name        string
		given       *string
		otherWorker func(*configMaps)
		project     string
		expected    ledgerOutcome
	}{
		{name: "the project goes, the others stay",
			given: ptr(`{"p1":["da"],"p2":["sv"]}`), project: "p1", expected: ledgerOutcome{Stored: `{"p2":["sv"]}`, Writes: 1}},
		{name: "no ConfigMap: nothing to forget", project: "p1", expected: ledgerOutcome{Stored: "<none>"}},
		{name: "a project not there costs no write",
			given: ptr(`{"p2":["sv"]}`), project: "p1", expected: ledgerOutcome{Stored: `{"p2":["sv"]}`}},
		{name: "an unreadable ledger is left as it is",
			given: ptr(`not json`), project: "p1", expected: ledgerOutcome{Stored: `not json`,
				Err: "removing project p1 from ConfigMap harvester-system/harvester-equinix-addon-ledger: ConfigMap harvester-system/harvester-equinix-addon-ledger key projects: invalid character 'o' in literal null (expecting 'u')"}},
		{name: "a project another worker records meanwhile is kept",
			given: ptr(`{"p1":["da"]}`), project: "p1", expected: ledgerOutcome{Stored: `{"other":["ny"]}`, Writes: 1},
			otherWorker: func(c *configMaps) {
				cm, _ := c.Get(namespace, equinixv1.ConfigMapLedger, metav1.GetOptions{})
				cm.Data[dataKey] = `{"other":["ny"],"p1":["da"]}`
				_, _ = c.Store.Update(cm)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cms := newConfigMaps(tc.given)
			cms.otherWorker = tc.otherWorker
			err := New(cms, namespace).Forget(tc.project)
			assert.Equal(t, tc.expected, cms.outcome(t, err))
		})
	}
}
