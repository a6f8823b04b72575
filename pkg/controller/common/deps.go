// Package common holds what every controller of the addon shares: typed
// clients and caches, the Metal provider, the event recorder, and the names
// (labels, tags, annotations) that mark what the addon owns.
package common

import (
	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	harvestercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Deps is passed to every Register function.
type Deps struct {
	Cfg *config.Config
	// ClusterID tags every Metal object the addon creates.
	ClusterID string

	Pools      equinixcontrollers.InstancePoolController
	Instances  equinixcontrollers.InstanceController
	Nodes      corecontrollers.NodeController
	Secrets    corecontrollers.SecretController
	ConfigMaps corecontrollers.ConfigMapController
	Settings   harvestercontrollers.SettingController

	// K8s is a plain client for what has no cache here (pods of a node to drain).
	K8s kubernetes.Interface

	Metal       metal.Provider
	Credentials *credentials.Resolver
	JoinInfo    *joininfo.Resolver
	Recorder    record.EventRecorder
}
