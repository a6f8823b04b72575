package common

import (
	"testing"

	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
)

// The embedded interfaces are nil: the filters call only Cache.
type pools struct {
	equinixcontrollers.InstancePoolController
	cache generic.NonNamespacedCacheInterface[*equinixv1.InstancePool]
}

func (p pools) Cache() generic.NonNamespacedCacheInterface[*equinixv1.InstancePool] { return p.cache }

type instances struct {
	equinixcontrollers.InstanceController
	cache generic.NonNamespacedCacheInterface[*equinixv1.Instance]
}

func (i instances) Cache() generic.NonNamespacedCacheInterface[*equinixv1.Instance] { return i.cache }

func credentialsRef(name string) equinixv1.InstanceTemplate {
	return equinixv1.InstanceTemplate{EquinixMetal: equinixv1.EquinixMetal{CredentialsSecret: &equinixv1.SecretReference{Name: name}}}
}

func TestInputFilters(t *testing.T) {
	d := &Deps{Cfg: &config.Config{Namespace: "harvester-system", SecretName: "equinix-addon", JoinTokenSecret: "join"}}
	d.pools.must(func() equinixcontrollers.InstancePoolController {
		return pools{cache: fakecache.NonNamespaced[*equinixv1.InstancePool]{Cache: fakecache.New("instancepools",
			&equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: equinixv1.InstancePoolSpec{InstanceTemplate: credentialsRef("pool-creds")}},
			&equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: "b"}})}}
	})
	d.instances.must(func() equinixcontrollers.InstanceController {
		return instances{cache: fakecache.NonNamespaced[*equinixv1.Instance]{Cache: fakecache.New("instances",
			&equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "a-old"}, Spec: equinixv1.InstanceSpec{InstanceTemplate: credentialsRef("old-creds")}})}}
	})
	cases := []struct {
		name      string
		filter    InputFilter
		namespace string
		objName   string
		want      bool
	}{
		{"default credentials", d.InputSecret, "harvester-system", "equinix-addon", true},
		{"join token", d.InputSecret, "harvester-system", "join", true},
		{"a pool's credentials", d.InputSecret, "harvester-system", "pool-creds", true},
		{"an older Instance's credentials", d.InputSecret, "harvester-system", "old-creds", true},
		{"a console password the controller wrote", d.InputSecret, "harvester-system", "a-old-console", false},
		{"the default name in another namespace", d.InputSecret, "default", "equinix-addon", false},
		{"the VIP", d.InputConfigMap, "harvester-system", "vip", true},
		{"another ConfigMap", d.InputConfigMap, "harvester-system", "kube-root-ca.crt", false},
		{"the cluster version", InputSetting, "", "server-version", true},
		{"another Setting", InputSetting, "", "ui-source", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.filter(tc.namespace, tc.objName))
		})
	}
}

func TestOnlyInputsSkipsTheResolver(t *testing.T) {
	called := 0
	resolve := func(string, string, runtime.Object) ([]relatedresource.Key, error) {
		called++
		return []relatedresource.Key{{Name: "x"}}, nil
	}
	only := OnlyInputs(func(_, name string) bool { return name == "in" }, resolve)
	keys, err := only("ns", "out", nil)
	require.NoError(t, err)
	assert.Empty(t, keys)
	assert.Zero(t, called)
	keys, err = only("ns", "in", nil)
	require.NoError(t, err)
	assert.Equal(t, []relatedresource.Key{{Name: "x"}}, keys)
}
