package bmcinventory

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// Keys of a BMC credentials Secret.
const (
	UsernameKey = "username"
	PasswordKey = "password"
)

const (
	// bmcRetry is the longest wait before a BMC that failed is tried again
	// (a shorter poll interval wins): a BMC that is rebooting or whose
	// network blipped is back within minutes.
	bmcRetry = time.Minute
	// blockedRecheck paces an inventory that cannot run (no node, a
	// duplicate, no credentials) whose cause has no watch of its own.
	blockedRecheck = time.Minute
)

// Sync runs the hardware chain for a BMCInventory: it finds the node and
// the credentials, and then the hardware steps do what they do for an
// Instance, with the BMC as the machine.
func (h *Handler) Sync(name string, inv *v1.BMCInventory) (*v1.BMCInventory, error) {
	if inv == nil {
		h.driver.Forget(name)
		return nil, nil
	}
	t := h.newTarget(h.written.Latest(inv))
	r := &run{h: h, now: h.clock()}
	return t.Finish(r.syncBMC(t))
}

// run is one pass over one BMCInventory: its node, once found, and the
// pass's time.
type run struct {
	h    *Handler
	now  time.Time
	node *corev1.Node
}

// syncBMC checks what the BMC needs, builds its machine and runs the
// steps; what the BMC answered becomes the conditions and the status.
func (r *run) syncBMC(t *target) error {
	inv := t.Obj
	if inv.DeletionTimestamp != nil {
		r.h.driver.Forget(inv.Name)
		return nil
	}
	ok, err := r.bindNode(t)
	if err != nil || !ok {
		return err
	}
	ep, ok := r.bmcEndpoint(t)
	if !ok {
		return nil
	}
	interval := inv.Spec.WantedPollInterval().Duration
	var last time.Time
	if inv.Status.LastPolled != nil {
		last = inv.Status.LastPolled.Time
	}
	var pace time.Duration
	if inv.Status.LastPowerAction.InFlight() {
		// The checks of an action under way keep the pace of the requeue,
		// whatever else brings the inventory back in between.
		pace = t.PowerRecheck(r.h.settings.PollInterval)
	}
	m := r.h.driver.Machine(ep, bmcdriver.MachineOptions{Owner: inv.Name, Key: string(inv.UID), Interval: interval, LastPolled: last,
		PowerPace: pace, Now: r.h.clock})
	err = r.observeBMC(t, m, interval, r.h.steps.Sync(t, m, r.node, r.now))
	// The session stays for the next pass when that comes soon (a power
	// action followed, a short poll interval), and is logged out otherwise.
	m.Release(t.After())
	return err
}

// bindNode finds the node and makes sure the inventory may act on it: it
// is not one of the addon's own servers, and no older inventory names it.
// A missing node does not stop the chain (events go to the inventory, and
// power waits); the other two do.
func (r *run) bindNode(t *target) (bool, error) {
	name := t.Obj.Spec.NodeName
	others, err := r.h.inventories.Cache().GetByIndex(indexByNodeName, name)
	if err != nil {
		return false, fmt.Errorf("listing the BMCInventories of node %s: %w", name, err)
	}
	if first := oldest(others); first != nil && first.UID != t.Obj.UID {
		t.SetCondition(v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonDuplicateInventory, fmt.Sprintf(
			"BMCInventory %s already maps node %s to its BMC; this one does nothing until that one is deleted", first.Name, name))
		t.Requeue(blockedRecheck)
		return false, nil
	}
	node, err := r.h.nodes.Get(name)
	node = r.h.nodeWrites.Latest(node)
	switch {
	case apierrors.IsNotFound(err):
		t.SetCondition(v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonNodeNotFound, fmt.Sprintf(
			"node %s does not exist (kubectl get nodes lists the names); its BMC's events go to this BMCInventory and power requests wait", name))
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading node %s: %w", name, err)
	}
	if inst := node.Labels[v1.LabelInstance]; inst != "" {
		t.SetCondition(v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonNodeProvisioned, fmt.Sprintf(
			"node %s is the addon's own server (Instance %s), whose hardware the Instance reports; delete this BMCInventory", name, inst))
		return false, nil
	}
	r.node = node
	t.SetCondition(v1.BMCNodeFound, metav1.ConditionTrue, v1.ReasonNodeFound, fmt.Sprintf("node %s exists", name))
	return true, nil
}

// oldest is the inventory that keeps a node several name: the first made.
func oldest(invs []*v1.BMCInventory) *v1.BMCInventory {
	live := make([]*v1.BMCInventory, 0, len(invs))
	for _, i := range invs {
		if i.DeletionTimestamp == nil {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return nil
	}
	sort.Slice(live, func(a, b int) bool {
		ta, tb := live[a].CreationTimestamp, live[b].CreationTimestamp
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return live[a].Name < live[b].Name
	})
	return live[0]
}

// bmcEndpoint reads the credentials Secret and builds the endpoint. The
// password goes into a redact.Sensitive and nowhere else.
func (r *run) bmcEndpoint(t *target) (bmc.Endpoint, bool) {
	spec := t.Obj.Spec
	ns := r.h.settings.Namespace
	ref := ns + "/" + spec.CredentialsSecret.Name
	fail := func(reason, msg string) (bmc.Endpoint, bool) {
		t.SetCondition(v1.BMCCredentialsReady, metav1.ConditionFalse, reason, msg)
		t.Requeue(blockedRecheck)
		return bmc.Endpoint{}, false
	}
	sec, err := r.h.secrets.Get(ns, spec.CredentialsSecret.Name)
	if ce, ok := credentials.AsError(err); ok {
		return fail(ce.Reason, ce.Message)
	}
	if apierrors.IsNotFound(err) {
		return fail(v1.ReasonSecretNotFound, fmt.Sprintf("Secret %s not found: create it with keys %s and %s, labelled %s=%s",
			ref, UsernameKey, PasswordKey, v1.LabelSecret, v1.SecretCredentials))
	}
	if err != nil {
		return fail(v1.ReasonSecretNotFound, fmt.Sprintf("Secret %s cannot be read: %s", ref, apierrors.ReasonForError(err)))
	}
	user := strings.TrimSpace(string(sec.Data[UsernameKey]))
	pass := string(sec.Data[PasswordKey])
	var missing []string
	if user == "" {
		missing = append(missing, UsernameKey)
	}
	if pass == "" {
		missing = append(missing, PasswordKey)
	}
	if len(missing) > 0 {
		return fail(v1.ReasonSecretIncomplete, fmt.Sprintf("Secret %s has no %s", ref, strings.Join(missing, " and no ")))
	}
	t.SetCondition(v1.BMCCredentialsReady, metav1.ConditionTrue, v1.ReasonCredentialsReady,
		fmt.Sprintf("Secret %s holds a username and a password", ref))
	return bmc.Endpoint{
		Protocol:           bmc.Protocol(spec.BMC.Protocol),
		Host:               spec.BMC.Host,
		Port:               int(spec.BMC.Port),
		InsecureSkipVerify: spec.BMC.InsecureSkipVerify,
		CABundle:           []byte(spec.BMC.CABundle),
		Username:           user,
		Password:           redact.Sensitive(pass),
		Timeout:            r.h.settings.BMCTimeout,
	}, true
}
