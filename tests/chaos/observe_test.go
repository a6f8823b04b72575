package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// ledger records, from the simulator's notifications, every device stored
// for this cluster by the Instance UID in its tags, and how many of an
// Instance's devices existed at once. The request log has no tags;
// notifications have them, and fire for every stored create, also one whose
// answer a fault replaced.
type ledger struct {
	clusterTag string

	mu       sync.Mutex
	created  map[string][]string // Instance UID -> devices stored for it
	alive    map[string]int      // Instance UID -> devices existing now
	maxAlive map[string]int
	uidOf    map[string]string // device ID -> Instance UID
	gone     map[string]bool   // devices deleted
	oob      map[string]bool   // devices the campaign deleted out of band
	// project is the project each device was made in; misplaced lists the
	// devices of a pool made outside the projects its Secret can name.
	project   map[string]string
	misplaced []string
	// projectB names the pools whose own Secret names project B.
	projectB map[string]bool
}

func newLedger(clusterTag string, projectB map[string]bool) *ledger {
	return &ledger{
		clusterTag: clusterTag, created: map[string][]string{}, alive: map[string]int{},
		maxAlive: map[string]int{}, uidOf: map[string]string{}, gone: map[string]bool{}, oob: map[string]bool{},
		project: map[string]string{}, projectB: projectB,
	}
}

// projectOf is the project a device was made in.
func (l *ledger) projectOf(deviceID string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.project[deviceID]
	return p, ok
}

// place records where a device was made: a pool of project B's Secret
// makes servers there only; a pool on the default Secret in the campaign's
// project, or in project B while that Secret names it.
func (l *ledger) place(n metalsim.Notification) {
	if n.ProjectID == "" {
		return // a notification that does not say (a unit test's) places nothing
	}
	l.project[n.DeviceID] = n.ProjectID
	pool, _ := equinixv1.TagValue(n.Tags, equinixv1.TagPool)
	switch {
	case l.projectB[pool] && n.ProjectID != projectB:
		l.misplaced = append(l.misplaced, fmt.Sprintf("device %s (%s) of pool %s, whose Secret names project B, was made in project %s", n.DeviceID, n.Hostname, pool, n.ProjectID))
	case !l.projectB[pool] && n.ProjectID != framework.ProjectID && n.ProjectID != projectB:
		l.misplaced = append(l.misplaced, fmt.Sprintf("device %s (%s) of pool %s was made in project %s, which no Secret of the run names", n.DeviceID, n.Hostname, pool, n.ProjectID))
	}
}

func (l *ledger) observe(n metalsim.Notification) {
	if !slices.Contains(n.Tags, l.clusterTag) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch n.Type {
	case metalsim.DeviceCreated:
		uid, _ := equinixv1.TagValue(n.Tags, equinixv1.TagInstance)
		l.created[uid] = append(l.created[uid], n.DeviceID)
		l.uidOf[n.DeviceID] = uid
		l.alive[uid]++
		l.maxAlive[uid] = max(l.maxAlive[uid], l.alive[uid])
		l.place(n)
	case metalsim.DeviceDeleted:
		if uid, ok := l.uidOf[n.DeviceID]; ok && !l.gone[n.DeviceID] {
			l.gone[n.DeviceID] = true
			l.alive[uid]--
		}
		if n.OutOfBand {
			l.oob[n.DeviceID] = true
		}
	}
}

// violations: every Instance UID got exactly one stored device (the brief's
// "one 201 per Instance": a replacement is a new Instance with a new UID), so
// no Instance ever had two devices at once either.
func (l *ledger) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.misplaced...)
	for _, uid := range sortedKeys(l.created) {
		ids := l.created[uid]
		if uid == "" {
			out = append(out, fmt.Sprintf("devices %v carry this cluster's tag but no Instance UID", ids))
			continue
		}
		if len(ids) != 1 {
			out = append(out, fmt.Sprintf("Instance UID %s: %d devices were created for it (%s); exactly one is allowed",
				uid, len(ids), strings.Join(ids, ", ")))
		}
		if l.maxAlive[uid] > 1 {
			out = append(out, fmt.Sprintf("Instance UID %s had %d devices at the same time", uid, l.maxAlive[uid]))
		}
	}
	return out
}

func (l *ledger) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ids := range l.created {
		n += len(ids)
	}
	return fmt.Sprintf("%d devices created for %d Instances, %d deleted out of band", n, len(l.created), len(l.oob))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// killSwitch SIGKILLs the controller inside the first notification that
// matches the armed trigger, before the simulator answers the request that
// caused it. A trigger stays armed until it kills a running controller. Its
// lock is held across the check and the kill, so once suspend returns no
// notification kills the controller being started.
type killSwitch struct {
	addon *framework.Addon
	// hardware is killed with addon: the harvester-seeder install's pod.
	hardware   *framework.Addon
	clusterTag string
	marks      *disturbances
	vip        *vipHolder

	mu        sync.Mutex
	armed     string
	down      int
	suspended bool
	fired     string
	firedDown int
}

// arm sets the trigger and how many steps the controller stays down after it
// fired.
func (k *killSwitch) arm(trigger string, down int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.armed, k.down = trigger, down
}

func (k *killSwitch) disarm() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.armed = ""
}

func (k *killSwitch) suspend(suspended bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.suspended = suspended
}

// takeFired returns what the last kill hit and how long the controller stays
// down, once.
func (k *killSwitch) takeFired() (string, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	what, down := k.fired, k.firedDown
	k.fired = ""
	return what, down
}

func (k *killSwitch) observe(n metalsim.Notification) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Kept up to date whether armed or not: an unassign is a change.
	unassigned := k.vip.unassigned(n)
	fires := triggered(k.armed, n) || (k.armed == onVIPUnassign && unassigned)
	if k.armed == "" || k.suspended || !slices.Contains(n.Tags, k.clusterTag) || !fires {
		return
	}
	if k.addon.Kill() {
		k.hardware.Kill()
		k.marks.killed()
		k.fired = fmt.Sprintf("%s: %s of device %s (%s)", k.armed, n.Type, n.DeviceID, n.Hostname)
		k.firedDown = k.down
		k.armed = ""
	}
}

func triggered(trigger string, n metalsim.Notification) bool {
	switch trigger {
	case onCreated:
		return n.Type == metalsim.DeviceCreated
	case onActive:
		return n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_ACTIVE
	case onNetwork:
		return n.Type == metalsim.DeviceNetworkChanged && n.State == metalv1.DEVICESTATE_ACTIVE
	case onUpdated:
		return n.Type == metalsim.DeviceUpdated
	case onReinstall:
		return n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_REINSTALLING
	case onDeprovision:
		return n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_DEPROVISIONING
	}
	return false
}

// passwords collects the console passwords of the run's Instances while their
// Secrets exist (they go with the Instances), polling through apiserver
// restarts, for the final scan of logs, objects and Events.
type passwords struct {
	mu   sync.Mutex
	seen map[string]bool
	stop context.CancelFunc
	done chan struct{}
}

func watchPasswords(env *framework.Env) *passwords {
	ctx, cancel := context.WithCancel(env.Ctx)
	p := &passwords{seen: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			p.collect(ctx, env)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *passwords) collect(ctx context.Context, env *framework.Env) {
	secs, err := env.Kube.CoreV1().Secrets(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: equinixv1.LabelInstance})
	if err != nil {
		return // the apiserver is restarting; the next poll catches up
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range secs.Items {
		if pw := string(s.Data[provision.PasswordKey]); pw != "" {
			p.seen[pw] = true
		}
	}
}

// remember adds a password the run knows of (a BMC's).
func (p *passwords) remember(pw string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[pw] = true
}

func (p *passwords) all() []string {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return sortedKeys(p.seen)
}

// healthy reports whether the binary answers /healthz.
func healthy(a *framework.Addon) bool {
	url := strings.TrimSuffix(a.MetricsURL(), "/metrics") + "/healthz"
	client := &http.Client{Timeout: 2 * time.Second}
	for i := 0; i < 3; i++ {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
	}
	return false
}
