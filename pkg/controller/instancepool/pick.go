package instancepool

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"sort"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// active are the Instances not being deleted.
func active(insts []*equinixv1.Instance) []*equinixv1.Instance {
	out := make([]*equinixv1.Instance, 0, len(insts))
	for _, i := range insts {
		if i.DeletionTimestamp == nil {
			out = append(out, i)
		}
	}
	return out
}

// deleting are the Instances being deleted.
func deleting(insts []*equinixv1.Instance) []*equinixv1.Instance {
	var out []*equinixv1.Instance
	for _, i := range insts {
		if i.DeletionTimestamp != nil {
			out = append(out, i)
		}
	}
	return out
}

// scaleDownRank orders removal: lower goes first.
//  0. marked with the delete annotation by a person;
//  1. never joined, or failed (no node to drain, nothing running on it);
//  2. joined but unhealthy;
//  3. healthy, newest first (the oldest servers have proven themselves and
//     are the likeliest management nodes).
func scaleDownRank(inst *equinixv1.Instance) int {
	switch {
	case inst.Annotations[equinixv1.AnnotationDelete] == "true":
		return 0
	case inst.Status.JoinedAt == nil || inst.Status.Status == equinixv1.PhaseFailed:
		return 1
	case inst.Status.Status == equinixv1.PhaseUnhealthy:
		return 2
	default:
		return 3
	}
}

// scaleDownOrder sorts Instances in the order they are removed when a pool
// shrinks. It does not mutate its input.
func scaleDownOrder(insts []*equinixv1.Instance) []*equinixv1.Instance {
	out := append([]*equinixv1.Instance(nil), insts...)
	sort.SliceStable(out, func(a, b int) bool {
		ra, rb := scaleDownRank(out[a]), scaleDownRank(out[b])
		if ra != rb {
			return ra < rb
		}
		ta, tb := out[a].CreationTimestamp, out[b].CreationTimestamp
		if !ta.Equal(&tb) {
			return tb.Before(&ta) // newest first
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// pickReservation returns the pool's first hardware reservation not used by
// another of its Instances; "next-available" can be used any number of times.
// An empty result means on-demand hardware.
func pickReservation(pool *equinixv1.InstancePool, insts []*equinixv1.Instance) string {
	used := map[string]bool{}
	for _, i := range insts {
		used[i.Spec.HardwareReservationID] = true
	}
	for _, id := range pool.Spec.HardwareReservationIDs {
		if id == "next-available" || !used[id] {
			return id
		}
	}
	return ""
}

const nameLetters = "abcdefghijklmnopqrstuvwxyz"

// instanceName is <pool>-<8 random letters>, short enough for a hostname
// and unlikely to repeat.
func instanceName(pool string) (string, error) {
	b := make([]byte, 8)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(nameLetters))))
		if err != nil {
			return "", fmt.Errorf("random name: %w", err)
		}
		b[i] = nameLetters[n.Int64()]
	}
	return pool + "-" + string(b), nil
}
