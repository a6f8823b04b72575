package common

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

func node(name, instance string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if instance != "" {
		n.Labels = map[string]string{equinixv1.LabelInstance: instance}
	}
	return n
}

// An Equinix Metal server's node bears its Instance's name; an owned
// server's its Inventory's, once claimed; both carry the Instance's label.
func TestOwnedNodeByNodeName(t *testing.T) {
	metal := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "pool-a-x7k2p"}}
	assert.Equal(t, "pool-a-x7k2p", metal.NodeName())
	assert.True(t, OwnedNode(node("pool-a-x7k2p", "pool-a-x7k2p"), metal))
	assert.False(t, OwnedNode(node("pool-a-x7k2p", ""), metal), "a node of that name without the label is someone else's")

	owned := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "rack-a-x7k2p"}}
	owned.Spec.Servers = &equinixv1.OwnedServers{}
	assert.Empty(t, owned.NodeName(), "no server claimed, no node")
	assert.False(t, OwnedNode(node("rack-a-x7k2p", "rack-a-x7k2p"), owned))

	owned.Status.Server = "rack-a-1"
	assert.Equal(t, "rack-a-1", owned.NodeName())
	assert.True(t, OwnedNode(node("rack-a-1", "rack-a-x7k2p"), owned))
	assert.False(t, OwnedNode(node("rack-a-x7k2p", "rack-a-x7k2p"), owned), "named after the Instance, not the server")
	assert.False(t, OwnedNode(node("rack-a-1", "other"), owned), "another Instance's label")
	assert.False(t, OwnedNode(node("rack-a-1", ""), owned), "the server's node before the pool installed it")

	// A server that joined under another name stays followed by it.
	owned.Status.NodeName = "rack-a-x7k2p"
	assert.True(t, OwnedNode(node("rack-a-x7k2p", "rack-a-x7k2p"), owned))
}
