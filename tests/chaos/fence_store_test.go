package chaos

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// storedTaints rebuilds the fence nodes' history of the addon's taints from what etcd
// keeps of their Nodes, write by write: what the apiserver held, with no
// watch in between. complete is false when a compaction took the oldest
// writes of a node (then the watch's history is the judge).
func (r *run) storedTaints() (h *taintHistory, complete bool, err error) {
	w := r.fencing
	dec := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	h, complete = newTaintHistory(), true
	for _, n := range w.nodes {
		revs, compacted, err := r.env.Cluster.KeyHistory(r.env.Ctx, "/registry/minions/"+n.name)
		if err != nil {
			return nil, false, err
		}
		complete = complete && !compacted
		slices.Reverse(revs)
		for _, rev := range revs {
			obj, _, err := dec.Decode(rev.Value, nil, nil)
			if err != nil {
				return nil, false, fmt.Errorf("decoding node %s at revision %d: %w", n.name, rev.ModRevision, err)
			}
			node, ok := obj.(*corev1.Node)
			if !ok {
				return nil, false, fmt.Errorf("etcd holds a %T for node %s", obj, n.name)
			}
			// No arrival time: the change was read from the store.
			own, _ := outOfService(node)
			h.observe(n.name, own, uint64(rev.ModRevision), time.Time{})
		}
	}
	return h, complete, nil
}
