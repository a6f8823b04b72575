package sweep

import (
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// project is one Metal project to sweep.
type project struct {
	id string
	// creds are the credentials of a Secret naming the project; nil when
	// none does (the project cannot be listed).
	creds  *metal.Credentials
	metros map[string]bool
	// inUse is set when a pool's Secret names the project or an Instance
	// recorded it; recorded when the ledger holds it.
	inUse, recorded bool
}

func (p *project) addMetro(metro string) {
	if metro != "" {
		p.metros[strings.ToLower(metro)] = true
	}
}

// projects are the projects of the default Secret, of every pool's and
// Instance's Secret, of every project an Instance recorded, and of every
// project the ledger remembers, each with the metros the addon used there.
// Credentials for a project no pool names any more are looked for among the
// labelled credentials Secrets.
func (s *Sweeper) projects(insts []*equinixv1.Instance) ([]*project, error) {
	pools, err := s.pools.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	entries, err := s.ledger.Entries()
	if err != nil {
		return nil, err
	}
	byID := map[string]*project{}
	get := func(id string) *project {
		p, ok := byID[id]
		if !ok {
			p = &project{id: id, metros: map[string]bool{}}
			byID[id] = p
		}
		return p
	}
	credsOf := func(ref *equinixv1.SecretReference) *project {
		creds, err := s.credentials.For(ref)
		if err != nil {
			return nil // the pool or Instance reports it
		}
		p := get(creds.ProjectID)
		if p.creds == nil {
			p.creds = &creds
		}
		return p
	}
	if p := credsOf(nil); p != nil {
		// Pools without a Secret of their own make servers there.
		p.inUse = true
	}
	for _, pool := range pools {
		if p := credsOf(pool.Spec.CredentialsSecret); p != nil {
			p.inUse = true
			p.addMetro(pool.Spec.Metro)
		}
	}
	for _, inst := range insts {
		p := credsOf(inst.Spec.CredentialsSecret)
		if inst.Status.ProjectID != "" {
			p = get(inst.Status.ProjectID)
		}
		if p != nil {
			p.inUse = true
			p.addMetro(inst.Spec.Metro)
		}
	}
	for id, metros := range entries {
		p := get(id)
		p.recorded = true
		for _, m := range metros {
			p.addMetro(m)
		}
	}
	s.findCredentials(byID)
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*project, 0, len(ids))
	for _, id := range ids {
		out = append(out, byID[id])
	}
	return out, nil
}

// findCredentials fills the credentials of projects no pool or Instance
// Secret names from the other labelled credentials Secrets.
func (s *Sweeper) findCredentials(byID map[string]*project) {
	missing := 0
	for _, p := range byID {
		if p.creds == nil {
			missing++
		}
	}
	if missing == 0 {
		return
	}
	secrets, err := s.secrets.List(s.settings.Namespace, labels.SelectorFromSet(labels.Set{equinixv1.LabelSecret: equinixv1.SecretCredentials}))
	if err != nil {
		logrus.Warnf("device sweep: listing credentials Secrets: %v", err)
		return
	}
	sort.Slice(secrets, func(a, b int) bool { return secrets[a].Name < secrets[b].Name })
	for _, sec := range secrets {
		creds, err := s.credentials.For(&equinixv1.SecretReference{Name: sec.Name})
		if err != nil {
			continue
		}
		if p, ok := byID[creds.ProjectID]; ok && p.creds == nil {
			p.creds = &creds
		}
	}
}

// unreachable reports a project the addon made objects in that no Secret
// names any more: its orphans cannot be looked for until one does.
func (s *Sweeper) unreachable(p *project) {
	metros := make([]string, 0, len(p.metros))
	for m := range p.metros {
		metros = append(metros, m)
	}
	sort.Strings(metros)
	common.Eventf(s.recorder, s.involvedObject(""), equinixv1.ReasonProjectUnreachable,
		"the addon made objects in Equinix Metal project %s (metros %s) but no Secret labelled %s=%s holds its credentials any more: devices or VLANs left there cannot be found or released until one does",
		p.id, strings.Join(metros, ", "), equinixv1.LabelSecret, equinixv1.SecretCredentials)
}
