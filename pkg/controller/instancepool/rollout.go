package instancepool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// syncInPlace copies the pool's VLAN lists onto its Instances made from the
// same server template; the networking chain then converges their ports
// without reinstalling anything. An Instance that never asked for a device
// is not a server yet: it takes the whole template (a fixed Harvester
// version, SSH keys, tags), which otherwise reach only servers created later.
func (r *poolRun) syncInPlace() error {
	hash := templateHash(&r.pool.Spec.InstanceTemplate)
	want := r.pool.Spec.NetworkingConfiguration.InterfaceConfiguration
	for _, inst := range active(r.insts) {
		if inst.Annotations[v1.AnnotationTemplateHash] != hash {
			continue
		}
		upd := inst.DeepCopy()
		reason, what := v1.ReasonVLANsChanged, "the pool's new VLAN list"
		if notAServerYet(inst) {
			upd.Spec.InstanceTemplate = *r.pool.Spec.InstanceTemplate.DeepCopy()
			reason, what = v1.ReasonTemplateChanged, "the pool's template (it has no server yet)"
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
		r.Eventf(r.pool, reason, "instance %s takes %s", inst.Name, what)
	}
	return nil
}

// notAServerYet reports whether no device create was ever sent for the
// Instance: the project is recorded before the first one.
func notAServerYet(inst *v1.Instance) bool {
	return inst.Status.InstanceID == "" && inst.Status.ProjectID == ""
}

// rollout replaces servers made from an older template, one at a time and
// new server first (surge 1): while any is left the pool keeps count+1
// servers, and an old one is removed only once every new one is managed.
func (r *poolRun) rollout() error {
	hash := templateHash(&r.pool.Spec.InstanceTemplate)
	cur := active(r.insts)
	outdated, current := splitByTemplate(cur, hash)
	r.rolling = len(outdated) > 0 && r.pool.Spec.Count > 0
	if !r.rolling {
		r.setCondition(v1.PoolRollingOut, metav1.ConditionFalse, v1.ReasonUpToDate, "every server runs the pool's current template")
		return nil
	}
	r.setCondition(v1.PoolRollingOut, metav1.ConditionTrue, v1.ReasonReplacingOutdated,
		fmt.Sprintf("%d of %d servers run an older template; replacing them one at a time, the new server first", len(outdated), len(cur)))
	if len(cur) <= int(r.pool.Spec.Count) || len(current) == 0 || !allManaged(current) {
		return nil
	}
	victim := scaleDownOrder(outdated)[0]
	return r.deleteInstance(victim, v1.ReasonRollingOut, fmt.Sprintf("rolling out: instance %s runs an older template and its replacement is ready", victim.Name))
}

func splitByTemplate(insts []*v1.Instance, hash string) (outdated, current []*v1.Instance) {
	for _, i := range insts {
		if i.Annotations[v1.AnnotationTemplateHash] == hash {
			current = append(current, i)
		} else {
			outdated = append(outdated, i)
		}
	}
	return outdated, current
}

func allManaged(insts []*v1.Instance) bool {
	for _, i := range insts {
		if i.Status.Status != v1.PhaseManaged {
			return false
		}
	}
	return true
}

// templateHash hashes the part of a pool's template that shapes the server
// itself, which an existing server cannot change without a reinstall: plan,
// metro, credentials (the project), boot mode, network type, management ports,
// bond and VLAN, spot, install disk. VLAN lists and tags are not in it: they
// converge on running servers (unless they move the management VLAN).
func templateHash(t *v1.InstanceTemplate) string {
	mgmtVLAN, _ := harvester.ManagementVLANID(*t) // admission guarantees it resolves
	shape := struct {
		ManagementVLAN                                    int
		Plan, Metro, BootMode, NetworkType, InstallDevice string
		Credentials                                       *v1.SecretReference
		ManagementInterface                               []string
		Bond                                              map[string]string
		Spot                                              *v1.SpotSettings
	}{
		Plan: t.Plan, Metro: lower(t.Metro), BootMode: t.BootMode, NetworkType: t.NetworkingConfiguration.Type,
		InstallDevice: t.InstallDevice, ManagementVLAN: mgmtVLAN,
		Credentials: t.CredentialsSecret, ManagementInterface: t.ManagementInterface,
		Bond: t.ManagementBondingOptions, Spot: t.Spot,
	}
	raw, _ := json.Marshal(shape) // a struct of strings, maps and slices always marshals
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
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
