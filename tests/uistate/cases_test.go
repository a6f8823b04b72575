package uistate

import (
	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// passingWithout are the phases the UI shows right from the addon's own
// conditions alone.
func passingWithout() []uiCase {
	return []uiCase{
		instanceCase("joining, node not Ready yet", newInstance(v1.PhaseJoining, credsOK, created, active, converged, installConfig, installing, nodeJoined, notReadyYet), showsProgress, "container runtime network not ready"),
		instanceCase("managed", newInstance(v1.PhaseManaged, credsOK, created, active, converged, installConfig, installed, nodeJoined, ready), showsActive, ""),
		instanceCase("unhealthy", newInstance(v1.PhaseUnhealthy, credsOK, created, active, converged, installConfig, installed, nodeJoined, notReady), showsProgress, "kubelet stopped posting node status"),
		instanceCase("deleting", deleting(newInstance(v1.PhaseDeleting, credsOK, created, active, converged, installConfig, installed, nodeJoined, ready, maintenance)), showsProgress, "maintenance mode"),
		poolCase("ready", newPool(v1.PoolPhaseReady, 3, poolCreds, poolJoin, upToDate, upIdle, downIdle, allReady, remIdle, notBlocked), showsActive, ""),
		poolCase("provisioning", newPool(v1.PoolPhaseProvisioning, 1, poolCreds, poolJoin, upToDate, scalingUp, downIdle, notAllReady, remIdle, notBlocked), showsProgress, "2 provisioning"),
		poolCase("scaling down", newPool(v1.PoolPhaseScaling, 3, poolCreds, poolJoin, upToDate, upIdle, scalingDown, notAllReady, remIdle, notBlocked), showsProgress, "being removed"),
		poolCase("degraded", newPool(v1.PoolPhaseDegraded, 2, poolCreds, poolJoin, upToDate, upIdle, downIdle, notAllReady, replacing, notBlocked), showsProgress, "2 of 3 servers"),
		poolCase("deleting", newPool(v1.PoolPhaseDeleting, 3, poolCreds, poolJoin, upToDate, upIdle, poolDeleted, notAllReady, remIdle, notBlocked), showsProgress, "the pool is being deleted"),
	}
}

// needingUIConditions are the phases the addon's own conditions alone show
// wrongly: none the summary knows says "in progress" or "failed", so the UI
// would fall back to active.
func needingUIConditions() []uiCase {
	return []uiCase{
		instanceCase("pending, just created", newInstance(v1.PhasePending), showsProgress, ""),
		instanceCase("pending, create sent", newInstance(v1.PhasePending, credsOK, createSent), showsProgress, "creating a device"),
		instanceCase("pending, join token missing", newInstance(v1.PhasePending, credsOK, noToken), showsError, "put JOIN_TOKEN in Secret"),
		instanceCase("provisioning", newInstance(v1.PhaseProvisioning, credsOK, created, provisioning), showsProgress, "is provisioning (40%)"),
		instanceCase("networking", newInstance(v1.PhaseNetworking, credsOK, created, active, converging), showsProgress, "to leave bond0"),
		instanceCase("installing", newInstance(v1.PhaseInstalling, credsOK, created, active, converged, installConfig, installing), showsProgress, "reinstalled with the Harvester installer"),
		instanceCase("joining, node not registered yet", newInstance(v1.PhaseJoining, credsOK, created, active, converged, installConfig, installing, nodeWaiting), showsProgress, "to register"),
		instanceCase("credentials refused", newInstance(v1.PhaseProvisioning, refused, created, provisioning), showsError, "refused the credentials"),
		instanceCase("failed to provision", newInstance(v1.PhaseFailed, credsOK, created, provFailed), showsError, "could not provision device"),
		instanceCase("failed, device deleted after joining", newInstance(v1.PhaseFailed, credsOK, created, gone, converged, installConfig, installed, nodeJoined, ready), showsError, "deleted outside the addon"),
		poolCase("failed", newPool(v1.PoolPhaseFailed, 0, poolCreds, poolJoin, upToDate, upStopped, downIdle, notAllReady, remIdle, notBlocked, tooMany), showsError, "3 servers in a row failed"),
		poolCase("pending, credentials missing", newPool(v1.PoolPhasePending, 0, credsMissing, poolJoin, upToDate, scalingUp, downIdle, notAllReady, remIdle, notBlocked), showsError, "not found: create it"),
	}
}
