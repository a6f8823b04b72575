package equinixmetal

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// metalClient returns the Metal client of the Instance's credentials, or nil
// after recording why they cannot be used (the Secret watch brings the
// Instance back). Credentials of another project than the one the device was
// made in are refused: their API would answer 403 or 404 for the device,
// which must never read as "gone" while the device is billed elsewhere.
func (r *run) metalClient() (metal.Client, error) {
	creds, err := r.p.credentials.For(r.Obj.Spec.CredentialsSecret)
	if cerr, ok := credentials.AsError(err); ok {
		r.SetCondition(equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, cerr.Reason, cerr.Message)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !r.sameProject(creds) {
		r.Requeue(authRetry)
		return nil, nil
	}
	r.projectBack()
	client, err := r.p.metal.Client(creds)
	if err != nil {
		return nil, fmt.Errorf("building the Metal client: %w", err)
	}
	return readCachingClient{Client: client, cache: r.p.devices}, nil
}

// sameProject reports whether creds are of the project the device was made
// in (or of any, before the first create), and records on the Instance when
// they are not.
func (r *run) sameProject(creds metal.Credentials) bool {
	recorded := r.Obj.Status.ProjectID
	if recorded == "" || creds.ProjectID == recorded {
		return true
	}
	r.SetCondition(equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectMismatch, fmt.Sprintf(
		"Secret %s now names Equinix Metal project %s, but %s project %s; the addon acts on this server only with credentials of project %s: put them back in the Secret, or point spec.credentialsSecret at a Secret that has them (to move a pool to another project, give the pool a new Secret: it rolls its servers out)",
		r.p.credentials.RefFor(r.Obj.Spec.CredentialsSecret), creds.ProjectID, deviceIn(r.Obj.Status.InstanceID), recorded, recorded))
	return false
}

// followProject keeps a joined server's credentials condition true to the
// Secret it names now, from the cache and without a Metal call (a joined
// server makes none per reconcile). A Secret edited to name another project
// holds the pool's creates and names every server made in the old one: each
// of them must say so, and say when a Secret of its own project is back,
// not only the servers still provisioning. What only the API can tell (a
// revoked token) waits for the next call that needs it.
func (r *run) followProject() error {
	creds, err := r.p.credentials.For(r.Obj.Spec.CredentialsSecret)
	if _, ok := credentials.AsError(err); ok {
		return nil // reported by the next step that needs the Metal API
	}
	if err != nil {
		return err
	}
	if r.sameProject(creds) {
		r.projectBack()
	}
	return nil
}

// projectBack ends a project mismatch once the Secret names the device's
// project again. It cannot wait for the next Metal call to say so: a
// server whose installer runs and whose Node registered makes none until
// its Node is Ready, and its pool would show the old refusal as its cause.
func (r *run) projectBack() {
	if c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceCredentialsReady); c != nil && c.Reason == equinixv1.ReasonProjectMismatch {
		r.credentialsOK()
	}
}

func deviceIn(id string) string {
	if id == "" {
		return "this server's device create was sent to"
	}
	return "this server's device " + id + " was made in"
}

// recordProject notes, before the first create is sent, the project and
// metro the device is made in, on the Instance and in the ledger the orphan
// sweep reads. The caller persists the status before the create.
func (r *run) recordProject(project string) error {
	metro := strings.ToLower(r.Obj.Spec.Metro)
	if err := r.p.ledger.Record(project, metro); err != nil {
		return err
	}
	r.Obj.Status.ProjectID = project
	r.Obj.Status.Metro = metro
	return nil
}

// credentialsOK records that the credentials worked. Only a recovery from a
// refusal is worth an Event; the first success is not news.
func (r *run) credentialsOK() {
	const msg = "the Equinix Metal credentials work"
	if conditions.IsFalse(r.Obj.Status.Conditions, equinixv1.InstanceCredentialsReady) {
		r.SetCondition(equinixv1.InstanceCredentialsReady, metav1.ConditionTrue, equinixv1.ReasonCredentialsReady, msg)
		return
	}
	conditions.True(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.InstanceCredentialsReady, equinixv1.ReasonCredentialsReady, msg)
}
