package harvester

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
)

// Where a Harvester cluster keeps the facts a joining node needs.
const (
	VIPConfigMapNamespace    = "harvester-system"
	VIPConfigMapName         = "vip"
	VIPConfigMapIPKey        = "ip"
	ServerVersionSettingName = "server-version"
	// DefaultJoinTokenKey is the Secret key read when the caller names none; it
	// matches the key of rancherd's config file.
	DefaultJoinTokenKey = "token"
	// RancherdConfigPath holds the join token on every Harvester node; reading it
	// needs a hostPath mount, so it is only the fallback to an operator's Secret.
	RancherdConfigPath = "/etc/rancher/rancherd/config.yaml"
)

var (
	// ErrVIPConfigMapMissing means the harvester-system/vip ConfigMap does not exist.
	ErrVIPConfigMapMissing = errors.New("configmap harvester-system/vip not found")
	// ErrVIPEmpty means the ConfigMap exists but carries no VIP.
	ErrVIPEmpty = errors.New("configmap harvester-system/vip has an empty data.ip")
	// ErrVIPInvalid means data.ip is not an address the installer accepts.
	ErrVIPInvalid = errors.New("configmap harvester-system/vip has an invalid data.ip")
	// ErrInvalidServerURL is returned for cluster URLs the installer would refuse.
	ErrInvalidServerURL = errors.New("invalid server URL")
	// ErrVersionUnknown means the cluster's version cannot pin the installer.
	ErrVersionUnknown = errors.New("cannot determine the Harvester version to install")
	// ErrJoinTokenMissing means no join token was found where it was looked for.
	ErrJoinTokenMissing = errors.New("join token not found")
	// ErrInvalidJoinToken means the token has characters the installer refuses.
	ErrInvalidJoinToken = errors.New("invalid join token")

	// tokenPattern is the installer's validTokenChars: alphanumerics and the
	// OWASP password special characters (space included).
	tokenPattern = regexp.MustCompile("^[a-zA-Z0-9 !\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~]+$")
)

// NormalizeServerURL turns a VIP, a host name or a URL into the form the
// installer joins to, https://<host>:443, and refuses what the installer refuses
// (its getFormattedServerURL): any port but 443 and any path. It also refuses
// other schemes, IPv6 hosts, user info, queries and fragments, which the
// installer would reject or mangle.
func NormalizeServerURL(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", fmt.Errorf("%w: address is empty", ErrInvalidServerURL)
	}
	raw := addr
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %q cannot be parsed: %w", ErrInvalidServerURL, addr, err)
	}
	if err := checkServerURLParts(addr, u); err != nil {
		return "", err
	}
	if err := checkServerHost(addr, u.Hostname()); err != nil {
		return "", err
	}
	return "https://" + net.JoinHostPort(u.Hostname(), "443"), nil
}

func checkServerURLParts(addr string, u *url.URL) error {
	switch {
	case u.Scheme != "https":
		return fmt.Errorf("%w: %q must use https", ErrInvalidServerURL, addr)
	case u.User != nil:
		return fmt.Errorf("%w: %q must not carry user information", ErrInvalidServerURL, addr)
	case u.Path != "" && u.Path != "/":
		return fmt.Errorf("%w: %q has path %q; the installer allows no path", ErrInvalidServerURL, addr, u.Path)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Errorf("%w: %q must not have a query or fragment", ErrInvalidServerURL, addr)
	case u.Port() != "" && u.Port() != "443":
		return fmt.Errorf("%w: %q uses port %s; the installer joins only on port 443", ErrInvalidServerURL, addr, u.Port())
	}
	return nil
}

func checkServerHost(addr, host string) error {
	if ip := net.ParseIP(host); ip != nil {
		if ip.To4() == nil {
			return fmt.Errorf("%w: %q is an IPv6 address; the installer accepts only IPv4 addresses or DNS names", ErrInvalidServerURL, addr)
		}
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return fmt.Errorf("%w: %q is neither an IPv4 address nor a DNS name: %s", ErrInvalidServerURL, addr, strings.Join(errs, "; "))
	}
	return nil
}

// ServerURLFromVIPConfigMap reads data.ip of ConfigMap harvester-system/vip and
// returns the join URL. A nil ConfigMap means the caller found none.
func ServerURLFromVIPConfigMap(cm *corev1.ConfigMap) (string, error) {
	if cm == nil {
		return "", ErrVIPConfigMapMissing
	}
	ip := strings.TrimSpace(cm.Data[VIPConfigMapIPKey])
	if ip == "" {
		return "", fmt.Errorf("%w: the cluster VIP is not configured", ErrVIPEmpty)
	}
	parsed := net.ParseIP(ip)
	if parsed == nil || parsed.To4() == nil {
		return "", fmt.Errorf("%w: %q is not an IPv4 address", ErrVIPInvalid, ip)
	}
	return NormalizeServerURL(ip)
}

// VersionFromSetting returns the release the cluster runs, from the
// settings.harvesterhci.io object server-version. Development builds are
// refused because their artifacts are not published; the message tells the user
// how to pin a release instead.
func VersionFromSetting(s *harvesterv1beta1.Setting) (string, error) {
	if s == nil {
		return "", fmt.Errorf("%w: setting %s not found; set spec.harvesterVersion on the pool", ErrVersionUnknown, ServerVersionSettingName)
	}
	if s.Name != ServerVersionSettingName {
		return "", fmt.Errorf("%w: got setting %q, want %s", ErrVersionUnknown, s.Name, ServerVersionSettingName)
	}
	version := strings.TrimSpace(s.EffectiveValue())
	if version == "" {
		return "", fmt.Errorf("%w: setting %s is empty; set spec.harvesterVersion on the pool", ErrVersionUnknown, ServerVersionSettingName)
	}
	if !IsReleaseVersion(version) {
		return "", fmt.Errorf("%w: the cluster runs %q, which is not a release with published installer artifacts; set spec.harvesterVersion on the pool to a release such as v1.4.1", ErrVersionUnknown, version)
	}
	return version, nil
}

// ValidateToken applies the installer's token rule. The error never quotes the
// token.
func ValidateToken(token string) error {
	if token == "" {
		return fmt.Errorf("%w: token is empty", ErrInvalidJoinToken)
	}
	if !tokenPattern.MatchString(token) {
		return fmt.Errorf("%w: only letters, digits and OWASP password symbols are allowed", ErrInvalidJoinToken)
	}
	return nil
}

// JoinTokenFromSecret returns the join token stored under key (default "token")
// in an operator-provided Secret. A nil Secret means the caller found none.
func JoinTokenFromSecret(sec *corev1.Secret, key string) (string, error) {
	if key == "" {
		key = DefaultJoinTokenKey
	}
	if sec == nil {
		return "", fmt.Errorf("%w: secret does not exist", ErrJoinTokenMissing)
	}
	token := strings.TrimSpace(string(sec.Data[key]))
	if token == "" {
		return "", fmt.Errorf("%w: secret %s/%s has no non-empty key %q", ErrJoinTokenMissing, sec.Namespace, sec.Name, key)
	}
	if err := ValidateToken(token); err != nil {
		return "", fmt.Errorf("secret %s/%s key %q: %w", sec.Namespace, sec.Name, key, err)
	}
	return token, nil
}

// JoinTokenFromRancherdConfig returns the `token` key of rancherd's config file
// (RancherdConfigPath). It walks the YAML node tree instead of decoding into
// typed values, because decoding errors can quote document content.
func JoinTokenFromRancherdConfig(data []byte) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("rancherd config is not valid YAML: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return "", fmt.Errorf("%w: rancherd config is not a YAML mapping", ErrJoinTokenMissing)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "token" {
			continue
		}
		value := root.Content[i+1]
		token := strings.TrimSpace(value.Value)
		if value.Kind != yaml.ScalarNode || token == "" {
			return "", fmt.Errorf("%w: rancherd config key token is empty or not a string", ErrJoinTokenMissing)
		}
		if err := ValidateToken(token); err != nil {
			return "", fmt.Errorf("rancherd config: %w", err)
		}
		return token, nil
	}
	return "", fmt.Errorf("%w: rancherd config has no token key", ErrJoinTokenMissing)
}
