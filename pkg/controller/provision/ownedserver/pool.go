package ownedserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
)

// CheckPool reports whether the pool's Instances find free servers:
// while one waits for one, the pool says so (a Warning Event once, as the
// condition turns False). Servers people own need no credentials of the
// addon's.
func (p *Provider) CheckPool(_ *equinixv1.InstancePool, insts []*equinixv1.Instance) provision.PoolCheck {
	cond := provision.Condition{Type: equinixv1.PoolServersAvailable, Status: metav1.ConditionTrue, Reason: equinixv1.ReasonServersFree,
		Message: "every server of the pool is claimed"}
	if c := provision.InstanceCondition(insts, equinixv1.InstanceServerClaimed, metav1.ConditionFalse, equinixv1.ReasonNoFreeServer); c != nil {
		cond = provision.Condition{Type: equinixv1.PoolServersAvailable, Status: metav1.ConditionFalse, Reason: equinixv1.ReasonNoFreeServer,
			Message: fmt.Sprintf("%s; add servers (Inventories) that spec.servers.selector chooses, or lower count", c.Message)}
	}
	return provision.PoolCheck{Conditions: []provision.Condition{cond}}
}

// Capacity bounds the new servers a rollout creates by the free servers
// left: the Instances of the current template still waiting for one take
// theirs first. A surge without a server to claim would only wait.
func (p *Provider) Capacity(pool *equinixv1.InstancePool, current []*equinixv1.Instance, want int) (int, error) {
	free, err := FreeServers(p.inventories.Cache(), p.nodes, &pool.Spec.InstanceTemplate)
	if err != nil {
		return 0, err
	}
	for _, inst := range current {
		if inst.Status.Server == "" {
			free--
		}
	}
	return max(0, min(want, free)), nil
}
