package common

import (
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// InputFilter tells, by namespace and name, whether an object is one the
// controllers read: a credentials Secret, the join-token Secret, ConfigMap
// vip or Setting server-version. A deleted object arrives without its body,
// so the name is all a filter may rely on.
type InputFilter func(namespace, name string) bool

// OnlyInputs makes resolve run only for inputs. Pools and waiting Instances
// re-run when an input changes, so that a fixed Secret, a VIP or a version
// lets them continue at once. Everything else in the namespace must not
// re-run them, above all the console-password Secrets the controller writes
// itself, one per server: at 2,000 servers each of those re-ran every
// Instance still provisioning, and the workqueue never drained (make bench).
func OnlyInputs(input InputFilter, resolve relatedresource.Resolver) relatedresource.Resolver {
	return func(namespace, name string, obj runtime.Object) ([]relatedresource.Key, error) {
		if !input(namespace, name) {
			return nil, nil
		}
		return resolve(namespace, name, obj)
	}
}

// InputConfigMap is the filter for ConfigMaps: the VIP's.
func (d *Deps) InputConfigMap(namespace, name string) bool {
	return namespace == d.Cfg.Namespace && name == harvester.VIPConfigMapName
}

// InputSetting is the filter for Harvester Settings: the cluster's version.
func InputSetting(_, name string) bool {
	return name == harvester.ServerVersionSettingName
}

// InputSecret is the filter for Secrets: the default credentials, the join
// token, and any Secret a pool or an Instance names for its credentials (an
// Instance of an older template may name one its pool no longer does).
func (d *Deps) InputSecret(namespace, name string) bool {
	if namespace != d.Cfg.Namespace {
		return false
	}
	if name == d.Cfg.SecretName || name == d.Cfg.JoinTokenSecret {
		return true
	}
	pools, err := d.Pools().Cache().List(labels.Everything())
	if err != nil {
		// The cache lists from memory and does not fail; if it did, a
		// needless re-run is cheaper than a missed one.
		return true
	}
	for _, p := range pools {
		if ref := p.Spec.CredentialsSecret; ref != nil && ref.Name == name {
			return true
		}
	}
	insts, err := d.Instances().Cache().List(labels.Everything())
	if err != nil {
		return true
	}
	for _, i := range insts {
		if ref := i.Spec.CredentialsSecret; ref != nil && ref.Name == name {
			return true
		}
	}
	return false
}
