package joininfo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
)

const ns = "harvester-system"

type fixture struct {
	cfg      config.Config
	vip      string
	token    string
	version  string
	rancherd []byte
}

func (f fixture) resolver() *Resolver {
	var cms []*corev1.ConfigMap
	if f.vip != "-" {
		cms = append(cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vip"}, Data: map[string]string{"ip": f.vip}})
	}
	var secs []*corev1.Secret
	if f.token != "-" {
		secs = append(secs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "equinix-addon"},
			Data: map[string][]byte{"JOIN_TOKEN": []byte(f.token)}})
	}
	var settings []*harvesterv1beta1.Setting
	if f.version != "-" {
		settings = append(settings, &harvesterv1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: "server-version"}, Value: f.version})
	}
	cfg := f.cfg
	cfg.Namespace, cfg.JoinTokenSecret, cfg.JoinTokenKey = ns, "equinix-addon", "JOIN_TOKEN"
	r := NewResolver(&cfg, fakecache.New("configmaps", cms...), fakecache.New("secrets", secs...),
		fakecache.NonNamespaced[*harvesterv1beta1.Setting]{Cache: fakecache.New("settings", settings...)})
	r.readFile = func(string) ([]byte, error) {
		if f.rancherd == nil {
			return nil, errors.New("no such file")
		}
		return f.rancherd, nil
	}
	return r
}

func TestJoin(t *testing.T) {
	cases := []struct {
		name       string
		f          fixture
		wantURL    string
		wantReason string
		wantMsg    string
	}{
		{name: "discovered from the VIP and the Secret", f: fixture{vip: "10.0.0.10", token: "s3cret-token", version: "v1.4.1"}, wantURL: "https://10.0.0.10:443"},
		{name: "explicit URL wins", f: fixture{cfg: config.Config{ClusterURL: "https://vip.example.com"}, vip: "-", token: "s3cret-token"}, wantURL: "https://vip.example.com:443"},
		{name: "no VIP ConfigMap", f: fixture{vip: "-", token: "s3cret-token"}, wantReason: equinixv1.ReasonClusterURLMissing, wantMsg: "--cluster-url"},
		{name: "empty VIP", f: fixture{vip: "", token: "s3cret-token"}, wantReason: equinixv1.ReasonClusterURLMissing, wantMsg: "empty"},
		{name: "no token anywhere", f: fixture{vip: "10.0.0.10", token: "-"}, wantReason: equinixv1.ReasonJoinTokenMissing, wantMsg: "add key JOIN_TOKEN to Secret harvester-system/equinix-addon"},
		{name: "token from rancherd config", f: fixture{cfg: config.Config{RancherdConfig: "/host/config.yaml"}, vip: "10.0.0.10", token: "-", rancherd: []byte("token: from-host-token\n")}, wantURL: "https://10.0.0.10:443"},
		{name: "unreadable rancherd config", f: fixture{cfg: config.Config{RancherdConfig: "/host/config.yaml"}, vip: "10.0.0.10", token: "-"}, wantReason: equinixv1.ReasonJoinTokenMissing, wantMsg: "cannot be read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, err := tc.f.resolver().Join()
			if tc.wantReason != "" {
				e, ok := AsError(err)
				require.True(t, ok, "want a joininfo.Error, got %v", err)
				assert.Equal(t, tc.wantReason, e.Reason)
				assert.Contains(t, e.Message, tc.wantMsg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantURL, j.ServerURL)
			assert.NotEmpty(t, j.Token)
			assert.NotContains(t, fmt.Sprintf("%v %+v %#v %s", j, j, j, j), j.Token, "printing join info must not show the token")
		})
	}
}

func TestVersionAndIPXE(t *testing.T) {
	r := fixture{vip: "10.0.0.10", token: "t", version: "v1.4.1", cfg: config.Config{IPXENodePort: 30881}}.resolver()
	v, err := r.Version("")
	require.NoError(t, err)
	assert.Equal(t, "v1.4.1", v)
	v, err = r.Version("v1.5.0")
	require.NoError(t, err)
	assert.Equal(t, "v1.5.0", v, "the pool's override wins")
	base, err := r.IPXEBaseURL()
	require.NoError(t, err)
	assert.Equal(t, "http://10.0.0.10:30881", base)

	_, err = fixture{vip: "10.0.0.10", token: "t", version: "master"}.resolver().Version("")
	e, ok := AsError(err)
	require.True(t, ok)
	assert.Equal(t, equinixv1.ReasonVersionUnknown, e.Reason)
	assert.Contains(t, e.Message, "spec.harvesterVersion")

	_, err = fixture{vip: "10.0.0.10", token: "t", version: "v1.4.1"}.resolver().IPXEBaseURL()
	e, ok = AsError(err)
	require.True(t, ok)
	assert.Equal(t, equinixv1.ReasonIPXEURLMissing, e.Reason)

	base, err = fixture{vip: "-", cfg: config.Config{IPXEPublicURL: "http://ipxe.example.com"}}.resolver().IPXEBaseURL()
	require.NoError(t, err)
	assert.Equal(t, "http://ipxe.example.com", base)
}
