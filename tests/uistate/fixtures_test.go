// Package uistate tests how the Harvester UI will show InstancePools and
// Instances: its state badges come from wrangler's summary (pkg/summary) of
// each object, so every phase goes through summary.Summarize with the status
// the controller writes in that phase.
package uistate

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

const (
	device = "944af9c2-3e7f-4b2b-a7ea-a52bd57301c0"
	node   = "workers-xxihniml"
)

func cond(t string, s metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: 1,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))}
}

var (
	tr, fa, un = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown

	// Conditions an Instance gathers on its way, with the reasons and messages
	// pkg/controller/instance writes.
	credsOK       = cond(equinixv1.InstanceCredentialsReady, tr, equinixv1.ReasonCredentialsReady, "the Equinix Metal credentials work")
	createSent    = cond(equinixv1.InstanceDeviceCreated, un, "CreateSent", "creating a device (plan c3.small.x86, metro sg)")
	created       = cond(equinixv1.InstanceDeviceCreated, tr, equinixv1.ReasonDeviceCreated, "created device "+device+" (plan c3.small.x86, metro sg, hourly billing)")
	provisioning  = cond(equinixv1.InstanceDeviceActive, fa, equinixv1.ReasonProvisioning, "device "+device+" is provisioning (40%)")
	active        = cond(equinixv1.InstanceDeviceActive, tr, equinixv1.ReasonDeviceActive, "device "+device+" is active")
	converging    = cond(equinixv1.InstanceNetworkConfigured, fa, "Converging", "waiting for eth1 of device "+device+" to leave bond0")
	converged     = cond(equinixv1.InstanceNetworkConfigured, tr, "Converged", "ports of device "+device+" match hybrid")
	installConfig = cond(equinixv1.InstanceInstallConfigured, tr, equinixv1.ReasonInstallConfigured, "installer iPXE script and a join configuration for Harvester v1.4.1 are on device "+device)
	installing    = cond(equinixv1.InstanceInstalling, tr, equinixv1.ReasonInstallStarted, "device "+device+" was reinstalled with the Harvester installer")
	nodeWaiting   = cond(equinixv1.InstanceNodeJoined, fa, "Waiting", "waiting for the installer to finish and node "+node+" to register")
	nodeJoined    = cond(equinixv1.InstanceNodeJoined, tr, equinixv1.ReasonNodeJoined, "server joined the cluster as node "+node)
	notReadyYet   = cond(equinixv1.InstanceReady, fa, "NodeNotReadyYet", "node "+node+" is not Ready: container runtime network not ready")
	installed     = cond(equinixv1.InstanceInstalling, fa, "Installed", "Harvester is installed and node "+node+" is Ready")
	ready         = cond(equinixv1.InstanceReady, tr, equinixv1.ReasonNodeReady, "node "+node+" is Ready")
	notReady      = cond(equinixv1.InstanceReady, fa, equinixv1.ReasonNodeNotReady, "node "+node+" is not Ready: kubelet stopped posting node status (since 2026-11-01T12:00:00Z)")
	provFailed    = cond(equinixv1.InstanceDeviceActive, fa, equinixv1.ReasonProvisionFailed, "Equinix Metal could not provision device "+device+" (plan c3.small.x86, metro sg); the pool replaces this server")
	gone          = cond(equinixv1.InstanceDeviceActive, fa, equinixv1.ReasonDeviceGone, "device "+device+" is being deleted outside the addon")
	refused       = cond(equinixv1.InstanceCredentialsReady, fa, equinixv1.ReasonCredentialsInvalid, "Equinix Metal refused the credentials of Secret harvester-system/equinix-addon while reading the device: 401 Unauthorized")
	noToken       = cond(equinixv1.InstanceInstallConfigured, fa, equinixv1.ReasonJoinTokenMissing, "no join token: put JOIN_TOKEN in Secret harvester-system/equinix-addon")
	maintenance   = cond(equinixv1.InstanceDeleting, tr, "Maintenance", "requested Harvester maintenance mode (VMs migrate to other nodes) for node "+node+"; its server is deleted when that completes or after 30m0s")
)

func newInstance(phase string, conds ...metav1.Condition) *equinixv1.Instance {
	inst := &equinixv1.Instance{
		TypeMeta: metav1.TypeMeta{APIVersion: equinixv1.SchemeGroupVersion.String(), Kind: "Instance"},
		ObjectMeta: metav1.ObjectMeta{
			Name: node, Generation: 1, Finalizers: []string{equinixv1.FinalizerInstance},
			Labels: map[string]string{equinixv1.LabelPool: "workers"},
		},
		Spec:   equinixv1.InstanceSpec{PoolName: "workers", InstanceTemplate: equinixv1.InstanceTemplate{EquinixMetal: equinixv1.EquinixMetal{Plan: "c3.small.x86", Metro: "sg"}}},
		Status: equinixv1.InstanceStatus{Status: phase, ObservedGeneration: 1, Conditions: conds},
	}
	if phase != equinixv1.PhasePending && phase != "" {
		inst.Status.InstanceID = device
	}
	return inst
}

func deleting(inst *equinixv1.Instance) *equinixv1.Instance {
	now := metav1.NewTime(time.Date(2026, 11, 1, 13, 0, 0, 0, time.UTC))
	inst.DeletionTimestamp = &now
	return inst
}

// Pool conditions, as pkg/controller/instancepool writes them.
var (
	poolCreds    = cond(equinixv1.PoolCredentialsReady, tr, equinixv1.ReasonCredentialsReady, "Secret harvester-system/equinix-addon holds the Equinix Metal credentials")
	poolJoin     = cond(equinixv1.PoolJoinInfoReady, tr, equinixv1.ReasonJoinInfoReady, "the cluster URL, join token and Harvester version are known")
	upToDate     = cond(equinixv1.PoolRollingOut, fa, "UpToDate", "every server runs the pool's current template")
	upIdle       = cond(equinixv1.PoolScalingUp, fa, "Idle", "no servers are being added")
	downIdle     = cond(equinixv1.PoolScalingDown, fa, "Idle", "no servers are being removed")
	allReady     = cond(equinixv1.PoolReady, tr, "AllReady", "all 3 servers are managed with a Ready node")
	remIdle      = cond(equinixv1.PoolRemediating, fa, "Idle", "no unhealthy server is being replaced")
	notBlocked   = cond(equinixv1.PoolRemediationBlocked, fa, "NotBlocked", "no due replacement is held back")
	scalingUp    = cond(equinixv1.PoolScalingUp, tr, equinixv1.ReasonScalingUp, "1 of 3 servers ready, 2 provisioning")
	scalingDown  = cond(equinixv1.PoolScalingDown, tr, equinixv1.ReasonScalingDown, "1 server(s) being removed")
	notAllReady  = cond(equinixv1.PoolReady, fa, "NotAllReady", "2 of 3 servers are managed with a Ready node")
	replacing    = cond(equinixv1.PoolRemediating, tr, "Replacing", "replacing workers-abcdefgh: its node has not been Ready for 5m0s")
	tooMany      = cond(equinixv1.PoolProvisioningFailed, tr, "TooManyFailures", "3 servers in a row failed before joining (last, workers-abcdefgh: Equinix Metal could not provision the device); no more are created until the pool spec changes")
	upStopped    = cond(equinixv1.PoolScalingUp, fa, "ProvisioningFailed", "no servers are created until the pool spec changes (see ProvisioningFailed)")
	credsMissing = cond(equinixv1.PoolCredentialsReady, fa, equinixv1.ReasonCredentialsMissing, "Secret harvester-system/equinix-addon not found: create it with METAL_AUTH_TOKEN and PROJECT_ID")
	poolDeleted  = cond(equinixv1.PoolScalingDown, tr, "PoolDeleted", "the pool is being deleted: removing its 3 servers")
)

func newPool(phase string, readyN int32, conds ...metav1.Condition) *equinixv1.InstancePool {
	return &equinixv1.InstancePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: equinixv1.SchemeGroupVersion.String(), Kind: "InstancePool"},
		ObjectMeta: metav1.ObjectMeta{Name: "workers", Generation: 1},
		Spec:       equinixv1.InstancePoolSpec{Count: 3, InstanceTemplate: equinixv1.InstanceTemplate{EquinixMetal: equinixv1.EquinixMetal{Plan: "c3.small.x86", Metro: "sg"}}},
		Status:     equinixv1.InstancePoolStatus{Status: phase, Ready: readyN, Requested: 3, ObservedGeneration: 1, Conditions: conds},
	}
}
