package framework

import (
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// CreateAddressPool creates an AddressPool in harvester-system, where an
// owned pool's spec.servers.addressPool names it, with a status as a
// person creates it (none: Seeder's controller, or the addon, fills it
// in), deleted when the test ends. It returns its name.
func (e *Env) CreateAddressPool(name, cidr, gateway string, reserved ...string) string {
	e.T.Helper()
	pools := e.Client.MetalV1alpha1().AddressPools(seederv1alpha1.InventoryNamespace)
	_, err := pools.Create(e.Ctx, &seederv1alpha1.AddressPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: seederv1alpha1.InventoryNamespace},
		Spec:       seederv1alpha1.AddressSpec{CIDR: cidr, Gateway: gateway, ReservedAddresses: reserved},
	}, metav1.CreateOptions{})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = pools.Delete(e.Ctx, name, metav1.DeleteOptions{}) })
	return name
}

// AddressPool reads an AddressPool of harvester-system.
func (e *Env) AddressPool(name string) *seederv1alpha1.AddressPool {
	e.T.Helper()
	p, err := e.Client.MetalV1alpha1().AddressPools(seederv1alpha1.InventoryNamespace).Get(e.Ctx, name, metav1.GetOptions{})
	require.NoError(e.T, err)
	return p
}
