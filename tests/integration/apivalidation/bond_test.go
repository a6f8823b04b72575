package apivalidation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// The installer writes managementBondingOptions into the node's network
// configuration unchecked, so the apiserver is the last place a typo can be
// caught before a server is paid for and comes up without its management bond.

// TestBondOptionsAccepted: every option a Harvester management bond is set up
// with in practice, with values the bonding driver takes, passes admission
// (on the pool, and on an Instance, which carries the same template).
func TestBondOptionsAccepted(t *testing.T) {
	ctx, client := setup(t)
	for i, opts := range []map[string]string{
		{"mode": "active-backup", "miimon": "100", "primary": "eth0", "fail_over_mac": "active", "primary_reselect": "failure"},
		{"mode": "802.3ad", "miimon": "100", "lacp_rate": "fast", "xmit_hash_policy": "layer3+4", "ad_select": "bandwidth",
			"min_links": "1", "lacp_active": "on", "ad_actor_sys_prio": "65535", "ad_user_port_key": "1023", "ad_actor_system": "02:00:00:00:00:01"},
		{"mode": "balance-xor", "xmit_hash_policy": "vlan+srcmac", "updelay": "200", "downdelay": "200", "use_carrier": "1"},
		{"mode": "active-backup", "arp_interval": "100", "arp_ip_target": "10.0.0.1,192.168.255.254", "arp_validate": "filter_backup",
			"arp_all_targets": "all", "arp_missed_max": "3", "num_grat_arp": "5", "peer_notif_delay": "0"},
		{"mode": "balance-alb", "tlb_dynamic_lb": "off", "lp_interval": "1", "resend_igmp": "255", "all_slaves_active": "0"},
		{"mode": "balance-rr", "packets_per_slave": "65535", "ns_ip6_target": "fe80::1,2001:db8::2", "num_unsol_na": "0", "coupled_control": "on", "broadcast_neighbor": "off"},
	} {
		t.Run(fmt.Sprint(opts["mode"], "/", i), func(t *testing.T) {
			pool := parsePool(t, seedSample)
			pool.Name = fmt.Sprintf("bond-ok-%d", i)
			pool.Spec.ManagementBondingOptions = opts
			created, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, created.Name, metav1.DeleteOptions{}) })
			assert.Equal(t, opts, created.Spec.ManagementBondingOptions)

			inst := &equinixv1.Instance{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bond-ok-%d-abcdefgh", i)},
				Spec:       equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: pool.Spec.InstanceTemplate},
			}
			_, err = client.EquinixV1().Instances().Create(ctx, inst, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.EquinixV1().Instances().Delete(ctx, inst.Name, metav1.DeleteOptions{}) })
		})
	}
}

// TestBadBondOptionsRejected: each bad key or value is refused with a message
// that names it, so the person applying the pool knows what to fix.
func TestBadBondOptionsRejected(t *testing.T) {
	ctx, client := setup(t)
	for i, tc := range []struct {
		name string
		opts map[string]string
		want []string
	}{
		{"misspelled miimon", map[string]string{"mimon": "100"}, []string{`unknown bond option "mimon"`}},
		{"dash instead of underscore", map[string]string{"mode": "802.3ad", "xmit-hash-policy": "layer3+4"}, []string{`unknown bond option "xmit-hash-policy"`}},
		{"ports are the installer's", map[string]string{"slaves": "eth0 eth1"}, []string{`unknown bond option "slaves"`}},
		{"per-port option", map[string]string{"queue_id": "eth0:1"}, []string{`unknown bond option "queue_id"`}},
		{"uppercase key", map[string]string{"MIIMON": "100"}, []string{`unknown bond option "MIIMON"`}},
		{"numeric mode", map[string]string{"mode": "4"}, []string{`mode must be one of`, `not "4"`}},
		{"miimon with a unit", map[string]string{"miimon": "100ms"}, []string{`miimon must be a whole number`, `not "100ms"`}},
		{"negative updelay", map[string]string{"updelay": "-1"}, []string{`updelay must be a whole number`, `"-1"`}},
		{"arp_interval in words", map[string]string{"arp_interval": "fast"}, []string{`arp_interval must be a whole number`}},
		{"resend_igmp above 255", map[string]string{"resend_igmp": "256"}, []string{`resend_igmp must be from 0 to 255`, `not 256`}},
		{"arp_missed_max zero", map[string]string{"arp_missed_max": "0"}, []string{`arp_missed_max must be from 1 to 255`}},
		{"ad_user_port_key above 1023", map[string]string{"ad_user_port_key": "1024"}, []string{`ad_user_port_key must be from 0 to 1023`}},
		{"ad_actor_sys_prio zero", map[string]string{"ad_actor_sys_prio": "0"}, []string{`ad_actor_sys_prio must be from 1 to 65535`}},
		{"packets_per_slave above 65535", map[string]string{"packets_per_slave": "65536"}, []string{`packets_per_slave must be from 0 to 65535`}},
		{"lp_interval zero", map[string]string{"lp_interval": "0"}, []string{`lp_interval must be from 1 to`}},
		{"hash policy misspelled", map[string]string{"xmit_hash_policy": "layer34"}, []string{`xmit_hash_policy must be`, `not "layer34"`}},
		{"lacp_rate numeric alias", map[string]string{"lacp_rate": "1"}, []string{`lacp_rate must be slow or fast, not "1"`}},
		{"lacp_active yes", map[string]string{"lacp_active": "yes"}, []string{`lacp_active must be on or off`}},
		{"ad_select unknown", map[string]string{"ad_select": "fastest"}, []string{`ad_select must be`, `"fastest"`}},
		{"arp_validate unknown", map[string]string{"arp_validate": "strict"}, []string{`arp_validate must be`, `"strict"`}},
		{"arp_all_targets unknown", map[string]string{"arp_all_targets": "some"}, []string{`arp_all_targets must be any or all`}},
		{"fail_over_mac unknown", map[string]string{"fail_over_mac": "yes"}, []string{`fail_over_mac must be none, active or follow`}},
		{"primary_reselect unknown", map[string]string{"primary_reselect": "never"}, []string{`primary_reselect must be always, better or failure`}},
		{"use_carrier true", map[string]string{"use_carrier": "true"}, []string{`use_carrier must be 0, 1, off or on, not "true"`}},
		{"tlb_dynamic_lb yes", map[string]string{"tlb_dynamic_lb": "yes"}, []string{`tlb_dynamic_lb must be 0, 1, off or on`}},
		{"arp_ip_target hostname", map[string]string{"arp_ip_target": "gateway.local"}, []string{`arp_ip_target must be 1 to 16 IPv4 addresses`, `"gateway.local"`}},
		{"arp_ip_target octet too big", map[string]string{"arp_ip_target": "10.0.0.256"}, []string{`arp_ip_target must be`}},
		{"arp_ip_target space separated", map[string]string{"arp_ip_target": "10.0.0.1 10.0.0.2"}, []string{`arp_ip_target must be`}},
		{"arp_ip_target too long", map[string]string{"arp_ip_target": strings.Repeat("1.1.1.1,", 16) + "1.1.1.1"}, []string{`arp_ip_target: Too long`}},
		{"ns_ip6_target IPv4", map[string]string{"ns_ip6_target": "10.0.0.1"}, []string{`ns_ip6_target must be`}},
		{"ad_actor_system not a MAC", map[string]string{"ad_actor_system": "02:00:00:00:00"}, []string{`ad_actor_system must be a MAC address`}},
		{"primary with a space", map[string]string{"primary": "eth 0"}, []string{`primary must name a network interface`, `"eth 0"`}},
		{"active_slave too long", map[string]string{"active_slave": "a-very-long-interface-name"}, []string{`active_slave must name a network interface`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := parsePool(t, seedSample)
			pool.Name = fmt.Sprintf("bond-bad-%d", i)
			pool.Spec.ManagementBondingOptions = tc.opts
			_, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
			require.Error(t, err, "the apiserver accepted bond options %v", tc.opts)
			assert.Contains(t, err.Error(), "spec.managementBondingOptions")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}

			inst := &equinixv1.Instance{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bond-bad-%d-abcdefgh", i)},
				Spec:       equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: pool.Spec.InstanceTemplate},
			}
			_, err = client.EquinixV1().Instances().Create(ctx, inst, metav1.CreateOptions{})
			require.Error(t, err, "an Instance took bond options %v", tc.opts)
			assert.Contains(t, err.Error(), tc.want[0])
		})
	}
}
