package instancepool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// syncInPlace copies the pool's VLAN lists onto its Instances made from the
// same server template; the provider then converges their ports
// without reinstalling anything. An Instance that never asked for a device
// is not a server yet: it takes the whole template (a fixed Harvester
// version, SSH keys, tags), which otherwise reach only servers created later.
func (r *poolRun) syncInPlace() error {
	hash := templateHash(&r.Obj.Spec.InstanceTemplate)
	want := r.Obj.Spec.NetworkingConfiguration.InterfaceConfiguration
	for _, inst := range active(r.insts) {
		if inst.Annotations[equinixv1.AnnotationTemplateHash] != hash {
			continue
		}
		upd := inst.DeepCopy()
		reason, what := equinixv1.ReasonVLANsChanged, "the pool's new VLAN list"
		if notAServerYet(inst) {
			upd.Spec.InstanceTemplate = *r.Obj.Spec.InstanceTemplate.DeepCopy()
			reason, what = equinixv1.ReasonTemplateChanged, "the pool's template (it has no server yet)"
		} else {
			upd.Spec.NetworkingConfiguration.InterfaceConfiguration = nil
			for _, ic := range want {
				upd.Spec.NetworkingConfiguration.InterfaceConfiguration = append(upd.Spec.NetworkingConfiguration.InterfaceConfiguration, *ic.DeepCopy())
			}
		}
		if equality.Semantic.DeepEqual(inst.Spec, upd.Spec) {
			continue
		}
		if _, err := r.h.instances.Update(upd); err != nil {
			return fmt.Errorf("updating instance %s: %w", inst.Name, err)
		}
		r.Eventf(reason, "instance %s takes %s", inst.Name, what)
	}
	return nil
}

// notAServerYet reports whether no device create was ever sent for the
// Instance (the project is recorded before the first one), and no server
// people own was claimed for it.
func notAServerYet(inst *equinixv1.Instance) bool {
	return inst.Status.InstanceID == "" && inst.Status.ProjectID == "" && inst.Status.Server == ""
}

// rollout replaces servers made from an older template within
// spec.rollout's bounds (see planRollout): it removes the old servers the
// plan lets go now and leaves r.rolloutCreate new ones for scale to create.
// Removals wait while more servers are unhealthy than
// remediation.maxUnhealthy allows, as replacements do: a partition must not
// make the rollout remove servers that are fine. A management node the etcd
// quorum needs is never removed.
func (r *poolRun) rollout() error {
	hash := templateHash(&r.Obj.Spec.InstanceTemplate)
	cur := active(r.insts)
	outdated, _ := splitByTemplate(cur, hash)
	// The rollout lasts until the last old device is gone: until then its
	// bounds hold, and the last old server's successor waits as any other.
	oldLeaving, _ := splitByTemplate(deleting(r.insts), hash)
	r.rolling = len(outdated)+len(oldLeaving) > 0 && r.Obj.Spec.Count > 0
	r.surge, r.unavailable = rolloutBounds(r.Obj)
	// The summary counts available servers from the same Nodes.
	nodes, err := r.nodeList()
	if err != nil {
		return err
	}
	if !r.rolling {
		r.SetCondition(equinixv1.PoolRollingOut, metav1.ConditionFalse, equinixv1.ReasonUpToDate, "every server runs the pool's current template")
		return nil
	}
	f := r.fleet(r.insts, nodes)
	step := planRollout(f)
	if step.create, err = r.surgeCapacity(step.create); err != nil {
		return err
	}
	r.rolloutCreate = step.create
	if len(step.remove) > 0 {
		// The cache can lag behind a removal made a moment ago, and would
		// count a server already on its way out as available: removals are
		// decided on the API server's list.
		live, err := r.liveInstances()
		if err != nil {
			return err
		}
		f = r.fleet(live, nodes)
		step = planRollout(f)
	}
	reason, held := equinixv1.ReasonReplacingOutdated, ""
	if unhealthy, limit := countUnhealthy(cur), maxUnhealthy(r.Obj); len(step.remove) > 0 && unhealthy > limit {
		reason = equinixv1.ReasonTooManyUnhealthy
		held = fmt.Sprintf("; old servers stay while %d servers are unhealthy, more than remediation.maxUnhealthy allows (%d)", unhealthy, limit)
		step.remove = nil
	} else if len(step.held) > 0 && len(step.remove) == 0 {
		reason, held = equinixv1.ReasonQuorumGuard, "; old servers stay: "+strings.Join(step.held, "; ")
	}
	for _, victim := range step.remove {
		if err := r.deleteInstance(victim, equinixv1.ReasonRollingOut, fmt.Sprintf("rolling out: removing instance %s, made from an older template (%s)",
			victim.Name, r.boundsText())); err != nil {
			return err
		}
	}
	r.SetCondition(equinixv1.PoolRollingOut, metav1.ConditionTrue, reason, r.rolloutProgress(f, len(step.remove))+held)
	return nil
}

// fleet counts insts (all of the pool's, those being deleted too) for a
// rollout.
func (r *poolRun) fleet(insts []*equinixv1.Instance, nodes []*corev1.Node) fleet {
	cur := active(insts)
	outdated, current := splitByTemplate(cur, templateHash(&r.Obj.Spec.InstanceTemplate))
	return fleet{
		count: int(r.Obj.Spec.Count), surge: r.surge, unavailable: r.unavailable,
		outdated: outdated, current: current, removing: len(insts) - len(cur),
		available: availability(nodes), held: quorumHold(nodes, insts),
	}
}

// rolloutProgress says how far a rollout got, as `kubectl rollout status`
// does for a Deployment.
func (r *poolRun) rolloutProgress(f fleet, removedNow int) string {
	updatedAvailable := countAvailable(f.current, f.available)
	return fmt.Sprintf("waiting for the rollout to finish: %d of %d servers updated, %d of them available; %d old server(s) left, %d being removed (%s)",
		len(f.current), f.count, updatedAvailable, len(f.outdated)-removedNow, f.removing+removedNow, r.boundsText())
}

// boundsText states the rollout's bounds in servers.
func (r *poolRun) boundsText() string {
	count := int(r.Obj.Spec.Count)
	return fmt.Sprintf("at most %d servers with maxSurge %d, at least %d available with maxUnavailable %d",
		count+r.surge, r.surge, max(0, count-r.unavailable), r.unavailable)
}

func splitByTemplate(insts []*equinixv1.Instance, hash string) (outdated, current []*equinixv1.Instance) {
	for _, i := range insts {
		if i.Annotations[equinixv1.AnnotationTemplateHash] == hash {
			current = append(current, i)
		} else {
			outdated = append(outdated, i)
		}
	}
	return outdated, current
}

// TemplateHash is what a pool stores on each Instance as
// AnnotationTemplateHash: an Instance whose annotation differs from its
// pool's was made from an older template, and the pool rolls out while one
// is left. The fault campaign reads it to know when a pool rolls out.
func TemplateHash(t *equinixv1.InstanceTemplate) string { return templateHash(t) }

// templateHash hashes the part of a pool's template that shapes the server
// itself, which an existing server cannot change without a reinstall: plan,
// metro, credentials (the project), boot mode, network type, management ports,
// bond and VLAN, spot, install disk, the selector of servers people own.
// VLAN lists and tags are not in it: they
// converge on running servers (unless they move the management VLAN).
func templateHash(t *equinixv1.InstanceTemplate) string {
	mgmtVLAN, _ := harvester.ManagementVLANID(*t) // admission guarantees it resolves
	shape := struct {
		ManagementVLAN                                    int
		Plan, Metro, BootMode, NetworkType, InstallDevice string
		Credentials                                       *equinixv1.SecretReference
		ManagementInterface                               []string
		Bond                                              map[string]string
		Spot                                              *equinixv1.SpotSettings
		// Servers people own: another selector chooses other servers. Left
		// out when nil, so a Metal pool's hash is what it always was.
		Servers *equinixv1.OwnedServers `json:",omitempty"`
	}{
		Plan: t.Plan, Metro: lower(t.Metro), BootMode: t.BootMode, NetworkType: t.NetworkingConfiguration.Type,
		InstallDevice: t.InstallDevice, ManagementVLAN: mgmtVLAN,
		Credentials: t.CredentialsSecret, ManagementInterface: t.ManagementInterface,
		Bond: t.ManagementBondingOptions, Spot: t.Spot, Servers: serverShape(t.Servers),
	}
	raw, _ := json.Marshal(shape) // a struct of strings, maps and slices always marshals
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// serverShape is the part of spec.servers an installed server depends
// on. The boot path only says how a server is booted into the installer:
// a joined server does not boot again, so a change of it rolls nothing
// out and applies to the servers booted after it.
func serverShape(s *equinixv1.OwnedServers) *equinixv1.OwnedServers {
	if s == nil {
		return nil
	}
	shape := s.DeepCopy()
	shape.BootPath = ""
	return shape
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// surgeCapacity bounds the new servers a rollout creates by what the
// provider has to offer, the Instances of the current template first.
func (r *poolRun) surgeCapacity(want int) (int, error) {
	hash := templateHash(&r.Obj.Spec.InstanceTemplate)
	var current []*equinixv1.Instance
	for _, inst := range active(r.insts) {
		if inst.Annotations[equinixv1.AnnotationTemplateHash] == hash {
			current = append(current, inst)
		}
	}
	return r.h.provider.Capacity(r.Obj, current, want)
}
