package uistate

import (
	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// passingWithout are the phases the UI shows right from the addon's own
// conditions alone.
func passingWithout() []uiCase {
	return []uiCase{
		instanceCase("joining, node not Ready yet", newInstance(equinixv1.PhaseJoining, credsOK, created, active, converged, installConfig, installing, nodeJoined, notReadyYet), showsProgress, "container runtime network not ready"),
		instanceCase("managed", newInstance(equinixv1.PhaseManaged, credsOK, created, active, converged, installConfig, installed, nodeJoined, ready), showsActive, ""),
		instanceCase("unhealthy", newInstance(equinixv1.PhaseUnhealthy, credsOK, created, active, converged, installConfig, installed, nodeJoined, notReady), showsProgress, "kubelet stopped posting node status"),
		instanceCase("deleting", deleting(newInstance(equinixv1.PhaseDeleting, credsOK, created, active, converged, installConfig, installed, nodeJoined, ready, maintenance)), showsProgress, "maintenance mode"),
		poolCase("ready", newPool(equinixv1.PoolPhaseReady, 3, poolCreds, poolJoin, upToDate, upIdle, downIdle, allReady, remIdle, notBlocked), showsActive, ""),
		poolCase("provisioning", newPool(equinixv1.PoolPhaseProvisioning, 1, poolCreds, poolJoin, upToDate, scalingUp, downIdle, notAllReady, remIdle, notBlocked), showsProgress, "2 provisioning"),
		poolCase("scaling down", newPool(equinixv1.PoolPhaseScaling, 3, poolCreds, poolJoin, upToDate, upIdle, scalingDown, notAllReady, remIdle, notBlocked), showsProgress, "being removed"),
		poolCase("degraded", newPool(equinixv1.PoolPhaseDegraded, 2, poolCreds, poolJoin, upToDate, upIdle, downIdle, notAllReady, replacing, notBlocked), showsProgress, "2 of 3 servers"),
		poolCase("deleting", newPool(equinixv1.PoolPhaseDeleting, 3, poolCreds, poolJoin, upToDate, upIdle, poolDeleted, notAllReady, remIdle, notBlocked), showsProgress, "the pool is being deleted"),
	}
}

// needingUIConditions are the phases the addon's own conditions alone show
// wrongly: none the summary knows says "in progress" or "failed", so the UI
// would fall back to active.
func needingUIConditions() []uiCase {
	return []uiCase{
		instanceCase("pending, just created", newInstance(equinixv1.PhasePending), showsProgress, ""),
		instanceCase("pending, create sent", newInstance(equinixv1.PhasePending, credsOK, createSent), showsProgress, "creating a device"),
		instanceCase("pending, join token missing", newInstance(equinixv1.PhasePending, credsOK, noToken), showsError, "put JOIN_TOKEN in Secret"),
		instanceCase("provisioning", newInstance(equinixv1.PhaseProvisioning, credsOK, created, provisioning), showsProgress, "is provisioning (40%)"),
		instanceCase("networking", newInstance(equinixv1.PhaseNetworking, credsOK, created, active, converging), showsProgress, "to leave bond0"),
		instanceCase("installing", newInstance(equinixv1.PhaseInstalling, credsOK, created, active, converged, installConfig, installing), showsProgress, "reinstalled with the Harvester installer"),
		instanceCase("joining, node not registered yet", newInstance(equinixv1.PhaseJoining, credsOK, created, active, converged, installConfig, installing, nodeWaiting), showsProgress, "to register"),
		instanceCase("credentials refused", newInstance(equinixv1.PhaseProvisioning, refused, created, provisioning), showsError, "refused the credentials"),
		instanceCase("failed to provision", newInstance(equinixv1.PhaseFailed, credsOK, created, provFailed), showsError, "could not provision device"),
		instanceCase("failed, device deleted after joining", newInstance(equinixv1.PhaseFailed, credsOK, created, gone, converged, installConfig, installed, nodeJoined, ready), showsError, "deleted outside the addon"),
		poolCase("failed", newPool(equinixv1.PoolPhaseFailed, 0, poolCreds, poolJoin, upToDate, upStopped, downIdle, notAllReady, remIdle, notBlocked, tooMany), showsError, "3 servers in a row failed"),
		poolCase("pending, credentials missing", newPool(equinixv1.PoolPhasePending, 0, credsMissing, poolJoin, upToDate, scalingUp, downIdle, notAllReady, remIdle, notBlocked), showsError, "not found: create it"),
	}
}
