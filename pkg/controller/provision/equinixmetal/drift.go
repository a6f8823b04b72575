package equinixmetal

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// MarkDeviceGone notes that a joined Instance's device no longer exists
// (deleted outside the addon, or a spot server reclaimed), which a joined
// Instance otherwise would not notice: it makes no Metal call per reconcile.
// The note is stored by the Instance's next pass, the one writer of its
// status, which the note brings at once; the pool then replaces it. A note
// lost with the process is made again by the next sweep.
func (p *Provider) MarkDeviceGone(inst *equinixv1.Instance) error {
	p.goneDevices.note(inst.UID, fmt.Sprintf("device %s no longer exists in Equinix Metal; the pool replaces this server", inst.Status.InstanceID))
	p.instances.Enqueue(inst.Name)
	return nil
}

// storeDeviceGone puts the sweep's note, if any, on the Instance; the note
// is dropped once the status carrying it is stored.
func (r *run) storeDeviceGone() {
	uid := r.Obj.UID
	msg, ok := r.p.goneDevices.of(uid)
	if !ok {
		return
	}
	r.deviceGone(msg)
	r.OnStored(func(error) { r.p.goneDevices.drop(uid) })
}

// goneDevices are the sweep's notes of devices gone, by Instance.
type goneDevices struct {
	mu    sync.Mutex
	notes map[types.UID]string
}

func newGoneDevices() *goneDevices { return &goneDevices{notes: map[types.UID]string{}} }

func (g *goneDevices) note(uid types.UID, msg string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.notes[uid] = msg
}

// of returns the note of an Instance; a nil goneDevices (a handler built
// for a unit test) holds none.
func (g *goneDevices) of(uid types.UID) (string, bool) {
	if g == nil {
		return "", false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	msg, ok := g.notes[uid]
	return msg, ok
}

func (g *goneDevices) drop(uid types.UID) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.notes, uid)
}
