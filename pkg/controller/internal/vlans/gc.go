// Package vlans finds, creates and garbage-collects the Metal VLANs the addon
// attaches to its servers. Only VLANs carrying this cluster's tag are ever
// deleted, and only once no device port uses them and no Instance wants them.
package vlans

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// wanted is every VXLAN an Instance not being deleted attaches in metro, for
// the project of projectOf.
func wanted(insts []*equinixv1.Instance, metro string, sameProject func(*equinixv1.Instance) bool) map[int]bool {
	out := map[int]bool{}
	for _, i := range insts {
		if i.DeletionTimestamp != nil || !strings.EqualFold(i.Spec.Metro, metro) || !sameProject(i) {
			continue
		}
		for _, vx := range network.VXLANs(&i.Spec.InstanceTemplate) {
			out[vx] = true
		}
	}
	return out
}

// GC deletes this cluster's VLANs in metro that no device uses and no
// Instance wants. It returns the VXLANs it deleted and how many of this
// cluster's VLANs it kept. A VLAN still in use, or one the API refuses to
// delete now, is left for the next pass.
func GC(ctx context.Context, client metal.Client, clusterID, metro string, wanted map[int]bool) (deleted []int, kept int, err error) {
	vlans, err := client.ListVLANs(ctx, metro)
	if err != nil {
		return nil, 0, err
	}
	for _, v := range vlans {
		if !slices.Contains(v.Tags, equinixv1.ClusterTag(clusterID)) {
			continue
		}
		if wanted[v.VXLAN] || v.AssignedDevices > 0 {
			kept++
			continue
		}
		if err := client.DeleteVLAN(ctx, v.ID); err != nil {
			switch failure.ClassOf(err) {
			case failure.NotFound:
				continue
			case failure.Busy, failure.Invalid:
				// Still assigned somewhere the list did not show yet.
				kept++
				continue
			}
			return deleted, kept, fmt.Errorf("deleting VLAN %d in metro %s: %w", v.VXLAN, metro, err)
		}
		deleted = append(deleted, v.VXLAN)
	}
	return deleted, kept, nil
}

// Users are the Instances whose wishes decide which VLANs stay.
type Users struct {
	Instances   equinixcontrollers.InstanceCache
	Credentials *credentials.Resolver
	ClusterID   string
}

// CollectGarbage runs GC for metro with what every Instance of the same Metal
// project wants, as the Instance cache shows it.
func (u Users) CollectGarbage(ctx context.Context, client metal.Client, metro string) ([]int, int, error) {
	insts, err := u.Instances.List(labels.Everything())
	if err != nil {
		return nil, 0, err
	}
	project := client.ProjectID()
	sameProject := func(i *equinixv1.Instance) bool {
		if i.Status.ProjectID != "" {
			return i.Status.ProjectID == project
		}
		creds, err := u.Credentials.For(i.Spec.CredentialsSecret)
		// An Instance whose credentials cannot be read might be in this project:
		// keep what it wants rather than delete a VLAN it may use.
		return err != nil || creds.ProjectID == project
	}
	return GC(ctx, client, u.ClusterID, strings.ToLower(metro), wanted(insts, metro, sameProject))
}
