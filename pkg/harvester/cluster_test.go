package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
)

func TestNormalizeServerURL(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "10.0.0.5", want: "https://10.0.0.5:443"},
		{in: " 10.0.0.5 ", want: "https://10.0.0.5:443"},
		{in: "10.0.0.5:443", want: "https://10.0.0.5:443"},
		{in: "https://10.0.0.5", want: "https://10.0.0.5:443"},
		{in: "https://10.0.0.5:443/", want: "https://10.0.0.5:443"},
		{in: "harvester.example.com", want: "https://harvester.example.com:443"},
		{in: "", wantErr: "address is empty"},
		{in: "10.0.0.5:8443", wantErr: "uses port 8443"},
		{in: "https://10.0.0.5:6443", wantErr: "uses port 6443"},
		{in: "https://10.0.0.5/dashboard", wantErr: `has path "/dashboard"`},
		{in: "http://10.0.0.5", wantErr: "must use https"},
		{in: "https://user:pw@10.0.0.5", wantErr: "user information"},
		{in: "https://10.0.0.5?x=1", wantErr: "query or fragment"},
		{in: "[2001:db8::1]", wantErr: "IPv6"},
		{in: "Harvester_Host", wantErr: "neither an IPv4 address nor a DNS name"},
		{in: "https://10.0.0.5:abc", wantErr: "cannot be parsed"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := NormalizeServerURL(tc.in)
			if tc.wantErr != "" {
				assert.ErrorIs(t, err, ErrInvalidServerURL)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func vipConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: VIPConfigMapNamespace, Name: VIPConfigMapName},
		Data:       data,
	}
}

func TestServerURLFromVIPConfigMap(t *testing.T) {
	tests := []struct {
		name    string
		cm      *corev1.ConfigMap
		want    string
		wantErr error
		msg     string
	}{
		{name: "static VIP", cm: vipConfigMap(map[string]string{"enabled": "true", "ip": "145.40.73.10", "mode": "static"}), want: "https://145.40.73.10:443"},
		{name: "no configmap", cm: nil, wantErr: ErrVIPConfigMapMissing, msg: "configmap harvester-system/vip not found"},
		{name: "no data", cm: vipConfigMap(nil), wantErr: ErrVIPEmpty, msg: "empty data.ip"},
		{name: "blank ip", cm: vipConfigMap(map[string]string{"ip": "  "}), wantErr: ErrVIPEmpty, msg: "empty data.ip"},
		{name: "not an ip", cm: vipConfigMap(map[string]string{"ip": "vip.example.com"}), wantErr: ErrVIPInvalid, msg: `"vip.example.com" is not an IPv4 address`},
		{name: "IPv6", cm: vipConfigMap(map[string]string{"ip": "2001:db8::1"}), wantErr: ErrVIPInvalid, msg: "not an IPv4 address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ServerURLFromVIPConfigMap(tc.cm)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				assert.ErrorContains(t, err, tc.msg)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func setting(name, value, def string) *harvesterv1beta1.Setting {
	return &harvesterv1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, Default: def}
}

func TestVersionFromSetting(t *testing.T) {
	tests := []struct {
		name    string
		s       *harvesterv1beta1.Setting
		want    string
		wantErr string
	}{
		{name: "value", s: setting("server-version", "v1.4.1", ""), want: "v1.4.1"},
		{name: "default", s: setting("server-version", "", "v1.4.2"), want: "v1.4.2"},
		{name: "value wins over default", s: setting("server-version", "v1.5.0-rc2", "v1.4.2"), want: "v1.5.0-rc2"},
		{name: "missing", s: nil, wantErr: "setting server-version not found; set spec.harvesterVersion"},
		{name: "empty", s: setting("server-version", "", ""), wantErr: "is empty; set spec.harvesterVersion"},
		{name: "master", s: setting("server-version", "master", ""), wantErr: `"master", which is not a release`},
		{name: "dev", s: setting("server-version", "dev", ""), wantErr: "set spec.harvesterVersion"},
		{name: "head build", s: setting("server-version", "master-1a2b3c4-head", ""), wantErr: "set spec.harvesterVersion"},
		{name: "dirty build", s: setting("server-version", "v1.4.1-dirty", ""), wantErr: "set spec.harvesterVersion"},
		{name: "wrong setting", s: setting("ui-source", "v1.4.1", ""), wantErr: `got setting "ui-source"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := VersionFromSetting(tc.s)
			if tc.wantErr != "" {
				assert.ErrorIs(t, err, ErrVersionUnknown)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestJoinTokenFromSecret(t *testing.T) {
	secret := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "harvester-system", Name: "join"}, Data: data}
	}
	tests := []struct {
		name    string
		sec     *corev1.Secret
		key     string
		want    string
		wantErr error
		msg     string
	}{
		{name: "default key", sec: secret(map[string][]byte{"token": []byte("s3cr3t-T0ken")}), want: "s3cr3t-T0ken"},
		{name: "custom key, trailing newline", sec: secret(map[string][]byte{"joinToken": []byte("s3cr3t-T0ken\n")}), key: "joinToken", want: "s3cr3t-T0ken"},
		{name: "no secret", sec: nil, wantErr: ErrJoinTokenMissing, msg: "secret does not exist"},
		{name: "missing key", sec: secret(map[string][]byte{"other": []byte("x")}), wantErr: ErrJoinTokenMissing, msg: `secret harvester-system/join has no non-empty key "token"`},
		{name: "empty value", sec: secret(map[string][]byte{"token": []byte(" \n")}), wantErr: ErrJoinTokenMissing, msg: "no non-empty key"},
		{name: "invalid characters", sec: secret(map[string][]byte{"token": []byte("s3cr3t\u00e9")}), wantErr: ErrInvalidJoinToken, msg: `secret harvester-system/join key "token"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JoinTokenFromSecret(tc.sec, tc.key)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				assert.ErrorContains(t, err, tc.msg)
				assert.NotContains(t, err.Error(), "s3cr3t")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestJoinTokenFromRancherdConfig(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    string
		wantErr string
	}{
		{
			name: "rancherd template",
			data: "server: https://10.0.0.5:443\nrole: agent\ntoken: \"K10abc::server:s3cr3t\"\nkubernetesVersion: v1.30.7+rke2r1\n",
			want: "K10abc::server:s3cr3t",
		},
		{name: "numeric token", data: "token: 123456\n", want: "123456"},
		{name: "no token", data: "role: server\n", wantErr: "has no token key"},
		{name: "empty token", data: "token: \"\"\n", wantErr: "empty or not a string"},
		{name: "token is a list", data: "token:\n  - s3cr3t\n", wantErr: "empty or not a string"},
		{name: "not a mapping", data: "- s3cr3t\n", wantErr: "not a YAML mapping"},
		{name: "empty file", data: "", wantErr: "not a YAML mapping"},
		{name: "invalid YAML", data: "token: \"s3cr3t\n  bad: [", wantErr: "not valid YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JoinTokenFromRancherdConfig([]byte(tc.data))
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.NotContains(t, err.Error(), "s3cr3t")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
