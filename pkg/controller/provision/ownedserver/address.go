package ownedserver

import (
	"errors"
	"fmt"
	"net/netip"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/harvester/harvester-equinix-addon/pkg/addresspool"
	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// A server of a pool that names an AddressPool gets its static management
// address once it is claimed and before its boot is asked for: the boot
// image and the install configuration carry it. The address is recorded
// in the AddressPool's status, under the server's Inventory as Seeder
// records a node's, by a write that carries the resourceVersion read, so
// two Instances never get one address (the loser reads again). The pool
// is read from the apiserver, not the cache: after a write whose answer
// was lost, the cache may not show it yet, and the allocation the write
// made must be found again rather than a second one made.

// holderOf is the allocation entry's holder for a server.
func holderOf(server string) addresspool.Holder {
	return addresspool.Holder{Name: server, Namespace: seederv1alpha1.InventoryNamespace}
}

// managementAddress gives the claimed server inv its static address, when
// the pool names an AddressPool, and stores it in the Instance's status.
// It reports whether the server may be booted: false while the pool is
// missing, invalid or exhausted (the Installing condition says which; the
// AddressPools' watch brings the Instance back).
func (r *run) managementAddress(inv *seederv1alpha1.Inventory) (bool, error) {
	name := r.Obj.Spec.Servers.AddressPool
	if name == "" || r.Obj.Status.ManagementAddress != "" {
		return true, nil
	}
	var addr netip.Prefix
	var gateway string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pool, err := r.p.addressPools.Get(seederv1alpha1.InventoryNamespace, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		a, changed, err := addresspool.Allocate(pool, holderOf(inv.Name))
		if changed {
			if _, werr := r.p.addressPools.UpdateStatus(pool); werr != nil {
				return werr
			}
		}
		addr, gateway = a, pool.Spec.Gateway
		return err
	})
	if reason, msg, waits := addressProblem(name, err); waits {
		r.SetPhase(equinixv1.PhaseProvisioning)
		r.Obj.Status.WaitingFor = "management address"
		r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, reason, fmt.Sprintf("server %s: %s", inv.Name, msg))
		r.Requeue(4 * r.PollInterval())
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("taking a management address from AddressPool %s/%s: %w", seederv1alpha1.InventoryNamespace, name, err)
	}
	st := &r.Obj.Status
	st.ManagementAddress, st.ManagementGateway, st.ManagementAddressPool = addr.String(), gateway, name
	if err := r.Persist(); err != nil {
		return false, err
	}
	r.Eventf(equinixv1.ReasonAddressAllocated, "server %s takes management address %s (gateway %s) from AddressPool %s/%s",
		inv.Name, addr, gateway, seederv1alpha1.InventoryNamespace, name)
	return true, nil
}

// addressProblem says why a pool gives no address, when that is the
// pool's state rather than a failed request: waits is then true.
func addressProblem(name string, err error) (reason, msg string, waits bool) {
	pool := fmt.Sprintf("AddressPool %s/%s", seederv1alpha1.InventoryNamespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return equinixv1.ReasonAddressPoolNotFound, fmt.Sprintf("%s (spec.servers.addressPool) does not exist: create it, or unset addressPool "+
			"where the network has DHCP; waiting for it", pool), true
	case errors.Is(err, addresspool.ErrInvalid):
		return equinixv1.ReasonAddressPoolInvalid, fmt.Sprintf("%s cannot give an address: %v; correct its spec", pool, err), true
	case errors.Is(err, addresspool.ErrExhausted):
		return equinixv1.ReasonAddressPoolExhausted, fmt.Sprintf("%s: %v; widen its cidr, free reserved addresses, or lower the pool's count; "+
			"waiting for an address to be freed", pool, err), true
	}
	return "", "", false
}

// freeManagementAddress gives the server's address back to its
// AddressPool, once the server is off: only the entry that records it
// under this Instance's server, and not while another Instance holds the
// server (a server whose claim was taken from this Instance: its new
// holder found the address under the server and uses it). An address
// whose status write was lost is found under the server while this
// Instance still holds it.
func (r *run) freeManagementAddress(inv *seederv1alpha1.Inventory) error {
	st := &r.Obj.Status
	pool := st.ManagementAddressPool
	if pool == "" && inv != nil {
		pool = r.Obj.Spec.Servers.AddressPool
	}
	if pool == "" || st.Server == "" {
		return nil
	}
	if inv == nil {
		if st.ManagementAddress == "" {
			return nil
		}
		held, err := r.p.inventories.Cache().Get(seederv1alpha1.InventoryNamespace, st.Server)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading Inventory %s: %w", st.Server, err)
		}
		if err == nil && Claimed(held) {
			return r.forgetManagementAddress()
		}
	}
	var freed netip.Addr
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := r.p.addressPools.Get(seederv1alpha1.InventoryNamespace, pool, metav1.GetOptions{})
		if err != nil {
			return err
		}
		addr, ok := recordedAddress(obj, st.Server, st.ManagementAddress)
		if !ok || !addresspool.Release(obj, holderOf(st.Server), addr) {
			return nil
		}
		if _, err = r.p.addressPools.UpdateStatus(obj); err == nil {
			freed = addr
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("giving the management address of server %s back to AddressPool %s/%s: %w", st.Server,
			seederv1alpha1.InventoryNamespace, pool, err)
	}
	if freed.IsValid() {
		r.Eventf(equinixv1.ReasonAddressReleased, "gave management address %s of server %s back to AddressPool %s/%s",
			freed, st.Server, seederv1alpha1.InventoryNamespace, pool)
	}
	if st.ManagementAddress == "" {
		return nil
	}
	return r.forgetManagementAddress()
}

// recordedAddress is the address to give back: the status's, else the
// one the pool records under the server.
func recordedAddress(pool *seederv1alpha1.AddressPool, server, status string) (netip.Addr, bool) {
	if p, err := netip.ParsePrefix(status); err == nil {
		return p.Addr(), true
	}
	return addresspool.Find(pool, holderOf(server))
}

// forgetManagementAddress clears the address from the status, stored at
// once: it is given back only once.
func (r *run) forgetManagementAddress() error {
	st := &r.Obj.Status
	st.ManagementAddress, st.ManagementGateway, st.ManagementAddressPool = "", "", ""
	return r.Persist()
}
