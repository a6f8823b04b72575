// Package joininfo finds what a new server needs to join this cluster: the join
// URL, the join token, the Harvester release to install, and the base URL of the
// iPXE scripts. Explicit configuration wins; otherwise each is discovered from
// the cluster: ConfigMap vip, the join-token Secret (or rancherd's config on
// the host), and Setting server-version.
package joininfo

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	harvestercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// Error says why join information is missing; its message names what is missing
// and never a secret value.
type Error = conditions.Error

// AsError returns the *Error in err's chain, if any.
var AsError = conditions.AsError

// Join is what the install configuration needs. Printing it never shows the
// token.
type Join struct {
	ServerURL string
	Token     string
}

func (j Join) String() string { return "server_url=" + j.ServerURL + " token=<redacted>" }

// GoString keeps %#v from printing the token.
func (j Join) GoString() string { return "joininfo.Join{" + j.String() + "}" }

// Resolver reads through the caches on every call, so a fixed ConfigMap,
// Secret or Setting takes effect on the next reconcile.
type Resolver struct {
	cfg        *config.Config
	configMaps corecontrollers.ConfigMapCache
	secrets    secretGetter
	settings   harvestercontrollers.SettingCache
	readFile   func(string) ([]byte, error)
}

// secretGetter reads a Secret: the Secret cache, or credentials.Lookup
// over it, which explains a Secret that exists without the addon's label.
type secretGetter interface {
	Get(namespace, name string) (*corev1.Secret, error)
}

// NewResolver builds a resolver over the caches.
func NewResolver(cfg *config.Config, configMaps corecontrollers.ConfigMapCache, secrets secretGetter, settings harvestercontrollers.SettingCache) *Resolver {
	return &Resolver{cfg: cfg, configMaps: configMaps, secrets: secrets, settings: settings, readFile: os.ReadFile}
}

// Join returns the join URL and token.
func (r *Resolver) Join() (Join, error) {
	url, err := r.serverURL()
	if err != nil {
		return Join{}, err
	}
	token, err := r.token()
	if err != nil {
		return Join{}, err
	}
	return Join{ServerURL: url, Token: token}, nil
}

func (r *Resolver) serverURL() (string, error) {
	if r.cfg.ClusterURL != "" {
		u, err := harvester.NormalizeServerURL(r.cfg.ClusterURL)
		if err != nil {
			return "", &Error{Reason: equinixv1.ReasonClusterURLMissing, Message: fmt.Sprintf("--cluster-url: %v", err)}
		}
		return u, nil
	}
	ip, err := r.vip()
	if err != nil {
		return "", err
	}
	return harvester.NormalizeServerURL(ip)
}

// vip reads data.ip of ConfigMap <namespace>/vip.
func (r *Resolver) vip() (string, error) {
	cm, err := r.configMaps.Get(r.cfg.Namespace, harvester.VIPConfigMapName)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", r.cfg.Namespace, harvester.VIPConfigMapName, err)
	}
	if apierrors.IsNotFound(err) {
		cm = nil
	}
	url, err := harvester.ServerURLFromVIPConfigMap(cm)
	if err != nil {
		return "", &Error{Reason: equinixv1.ReasonClusterURLMissing, Message: fmt.Sprintf(
			"cannot find the cluster's join URL: %v; set clusterURL in the addon's values (--cluster-url)", err)}
	}
	host, _, err := net.SplitHostPort(trimScheme(url))
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", url, err)
	}
	return host, nil
}

func trimScheme(u string) string {
	const p = "https://"
	if len(u) > len(p) && u[:len(p)] == p {
		return u[len(p):]
	}
	return u
}

func (r *Resolver) token() (string, error) {
	sec, err := r.secrets.Get(r.cfg.Namespace, r.cfg.JoinTokenSecret)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading Secret %s/%s: %w", r.cfg.Namespace, r.cfg.JoinTokenSecret, err)
	}
	if apierrors.IsNotFound(err) {
		sec = nil
	}
	token, secretErr := harvester.JoinTokenFromSecret(sec, r.cfg.JoinTokenKey)
	if secretErr == nil {
		return token, nil
	}
	if errors.Is(secretErr, harvester.ErrInvalidJoinToken) {
		return "", &Error{Reason: equinixv1.ReasonJoinTokenMissing, Message: secretErr.Error()}
	}
	if r.cfg.RancherdConfig != "" {
		data, err := r.readFile(r.cfg.RancherdConfig)
		if err != nil {
			return "", &Error{Reason: equinixv1.ReasonJoinTokenMissing, Message: fmt.Sprintf(
				"no join token: Secret %s/%s has no key %s, and %s cannot be read: %v",
				r.cfg.Namespace, r.cfg.JoinTokenSecret, r.cfg.JoinTokenKey, r.cfg.RancherdConfig, err)}
		}
		token, err := harvester.JoinTokenFromRancherdConfig(data)
		if err != nil {
			return "", &Error{Reason: equinixv1.ReasonJoinTokenMissing, Message: fmt.Sprintf("no join token in %s: %v", r.cfg.RancherdConfig, err)}
		}
		return token, nil
	}
	return "", &Error{Reason: equinixv1.ReasonJoinTokenMissing, Message: fmt.Sprintf(
		"no join token: add key %s to Secret %s/%s (the token of /etc/rancher/rancherd/config.yaml on a Harvester node), or enable joinToken.fromHost in the addon's values",
		r.cfg.JoinTokenKey, r.cfg.Namespace, r.cfg.JoinTokenSecret)}
}

// Version is the Harvester release new servers install: the pool's override, or
// the cluster's own server-version.
func (r *Resolver) Version(override string) (string, error) {
	if override != "" {
		if err := harvester.ValidateVersion(override); err != nil {
			return "", &Error{Reason: equinixv1.ReasonVersionUnknown, Message: fmt.Sprintf("spec.harvesterVersion: %v", err)}
		}
		return override, nil
	}
	s, err := r.settings.Get(harvester.ServerVersionSettingName)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading setting %s: %w", harvester.ServerVersionSettingName, err)
	}
	if apierrors.IsNotFound(err) {
		s = nil
	}
	v, err := harvester.VersionFromSetting(s)
	if err != nil {
		return "", &Error{Reason: equinixv1.ReasonVersionUnknown, Message: err.Error()}
	}
	return v, nil
}

// IPXEBaseURL is the base URL servers fetch the addon's iPXE scripts from.
func (r *Resolver) IPXEBaseURL() (string, error) {
	if r.cfg.IPXEPublicURL != "" {
		return r.cfg.IPXEPublicURL, nil
	}
	if r.cfg.IPXENodePort == 0 {
		return "", &Error{Reason: equinixv1.ReasonIPXEURLMissing, Message: "no URL for the installer iPXE script: set ipxe.publicURL or ipxe.service.nodePort in the addon's values, or spec.ipxeScriptURL on the pool"}
	}
	ip, err := r.vip()
	if err != nil {
		if e, ok := AsError(err); ok {
			return "", &Error{Reason: equinixv1.ReasonIPXEURLMissing, Message: e.Message}
		}
		return "", err
	}
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(r.cfg.IPXENodePort)), nil
}
