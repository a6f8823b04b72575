// Package nodedevice finds the Equinix Metal device behind a Node, for the
// chains that act on a node's server without having provisioned it (the
// Elastic IP that follows kube-vip, BGP sessions): the first Harvester node
// of a cluster was installed by a person, not by the addon.
//
// In order: the device of the node's Instance (the addon's own servers);
// else the one device of the project whose addresses include one of the
// node's (its kubelet's --node-ip counts); else the device the person named in the node's annotation
// equinix.harvesterhci.io/device-id. A node none of these settle is
// reported, never guessed.
package nodedevice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// How a node was matched.
const (
	ByInstance   = "instance"
	ByAddress    = "address"
	ByAnnotation = "annotation"
)

// Match is a node's device and how it was found.
type Match struct {
	DeviceID string
	By       string
}

// InstanceGetter reads an Instance by name (the Instance cache).
type InstanceGetter interface {
	Get(name string) (*equinixv1.Instance, error)
}

// Matcher finds nodes' devices. Matches found through a device list are
// remembered, keyed by the node's addresses and annotation, so a node at
// rest costs no call; a listing is shared for a short while by every node
// of the project.
type Matcher struct {
	instances InstanceGetter
	now       func() time.Time

	mu      sync.Mutex
	matches map[string]remembered
	lists   map[string]listing
}

type remembered struct {
	fingerprint string
	match       Match
	// err is the report of a node that matched nothing, remembered too so
	// that such a node costs a device list per unmatchedTTL, not per event.
	err error
	at  time.Time
}

type listing struct {
	devices []metal.Device
	at      time.Time
}

// Lifetimes: a match stays while the node's addresses and annotation do,
// re-checked after matchTTL in case its device was replaced under the same
// addresses; a node that matched nothing is looked for again after
// unmatchedTTL, or at once when its addresses or annotation change; a
// device list serves the nodes matched together.
const (
	matchTTL     = 30 * time.Minute
	unmatchedTTL = 5 * time.Minute
	listTTL      = 30 * time.Second
)

// NewMatcher reads Instances through instances.
func NewMatcher(instances InstanceGetter) *Matcher {
	return &Matcher{instances: instances, now: time.Now, matches: map[string]remembered{}, lists: map[string]listing{}}
}

// Match finds node's device in the project of c. A node that matches no
// device, or several, is a *conditions.Error with v1.ReasonHostUnmatched
// whose message says what to do; Metal errors are returned as they come.
func (m *Matcher) Match(ctx context.Context, c metal.Client, node *corev1.Node) (Match, error) {
	project := c.ProjectID()
	id, note, err := m.byInstance(node, project)
	if err != nil || id != "" {
		return Match{DeviceID: id, By: ByInstance}, err
	}
	key, fp := project+"/"+node.Name, fingerprint(node)
	m.mu.Lock()
	r, ok := m.matches[key]
	m.mu.Unlock()
	if ok && r.fingerprint == fp {
		if age := m.now().Sub(r.at); r.err == nil && age < matchTTL {
			return r.match, nil
		} else if r.err != nil && age < unmatchedTTL {
			return Match{}, r.err
		}
	}
	devices, err := m.devices(ctx, c)
	if err != nil {
		return Match{}, err
	}
	match, err := byAddress(node, project, devices)
	if err == nil && match.DeviceID == "" {
		match, err = byAnnotation(ctx, c, node, note)
	}
	if _, report := conditions.AsError(err); err != nil && !report {
		return Match{}, err
	}
	m.mu.Lock()
	m.matches[key] = remembered{fingerprint: fp, match: match, err: err, at: m.now()}
	m.mu.Unlock()
	return match, err
}

// Forget drops what is remembered about a node, after its device turned
// out to be gone.
func (m *Matcher) Forget(project, node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.matches, project+"/"+node)
	delete(m.lists, project)
}

// byInstance is the device of the node's Instance. An Instance whose device
// lives in another project is noted for the report, not matched.
func (m *Matcher) byInstance(node *corev1.Node, project string) (id, note string, err error) {
	name := node.Labels[equinixv1.LabelInstance]
	if name == "" || name != node.Name {
		return "", "", nil
	}
	inst, err := m.instances.Get(name)
	if apierrors.IsNotFound(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading instance %s: %w", name, err)
	}
	switch {
	case inst.Status.InstanceID == "":
		return "", "", nil
	case inst.Status.ProjectID != "" && inst.Status.ProjectID != project:
		return "", fmt.Sprintf("; its Instance's device %s is in project %s", inst.Status.InstanceID, inst.Status.ProjectID), nil
	}
	return inst.Status.InstanceID, "", nil
}

func (m *Matcher) devices(ctx context.Context, c metal.Client) ([]metal.Device, error) {
	project := c.ProjectID()
	m.mu.Lock()
	l, ok := m.lists[project]
	m.mu.Unlock()
	if ok && m.now().Sub(l.at) < listTTL {
		return l.devices, nil
	}
	devices, err := c.ListDevices(ctx, metal.ListDevicesOptions{})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.lists[project] = listing{devices: devices, at: m.now()}
	m.mu.Unlock()
	return devices, nil
}

// byAddress is the one device of the project holding one of the node's
// addresses; no match is an empty Match, several are reported.
func byAddress(node *corev1.Node, project string, devices []metal.Device) (Match, error) {
	addrs := nodeAddresses(node)
	var found []string
	for _, d := range devices {
		if d.State == metal.DeviceStateDeprovisioning {
			continue
		}
		if slices.ContainsFunc(d.IPAddresses, func(ip metal.IPAddress) bool { return slices.Contains(addrs, ip.Address) }) {
			found = append(found, d.ID)
		}
	}
	switch len(found) {
	case 0:
		return Match{}, nil
	case 1:
		return Match{DeviceID: found[0], By: ByAddress}, nil
	}
	return Match{}, unmatched(fmt.Sprintf(
		"node %s: several devices of project %s have its addresses (%s): %s; name the right one: kubectl annotate node %s %s=<device ID>",
		node.Name, project, strings.Join(addrs, ", "), strings.Join(found, ", "), node.Name, equinixv1.AnnotationDeviceID))
}

// byAnnotation is the device a person named on the node, read by its ID:
// it must exist in the project.
func byAnnotation(ctx context.Context, c metal.Client, node *corev1.Node, note string) (Match, error) {
	project := c.ProjectID()
	want := strings.TrimSpace(node.Annotations[equinixv1.AnnotationDeviceID])
	if want == "" {
		return Match{}, unmatched(fmt.Sprintf(
			"node %s: no device of project %s has its addresses (%s)%s; if the node is an Equinix Metal server of that project, name it: kubectl annotate node %s %s=<device ID>",
			node.Name, project, strings.Join(nodeAddresses(node), ", "), note, node.Name, equinixv1.AnnotationDeviceID))
	}
	d, err := c.GetDevice(ctx, want)
	switch {
	case metal.IsNotFound(err) || failure.ClassOf(err) == failure.Forbidden:
		// A device of another project answers 403; one that never existed 404.
	case err != nil:
		return Match{}, err
	case d.ProjectID == "" || d.ProjectID == project:
		if d.State != metal.DeviceStateDeprovisioning {
			return Match{DeviceID: d.ID, By: ByAnnotation}, nil
		}
	}
	return Match{}, unmatched(fmt.Sprintf("node %s: its annotation %s names device %s, which project %s does not have",
		node.Name, equinixv1.AnnotationDeviceID, want, project))
}

func unmatched(msg string) error {
	return &conditions.Error{Reason: equinixv1.ReasonHostUnmatched, Message: msg}
}

// providedNodeIP is where a kubelet run with --cloud-provider=external
// keeps its --node-ip: such a node has no addresses until a cloud
// controller sets them, and this one is how it can be matched before.
const providedNodeIP = "alpha.kubernetes.io/provided-node-ip"

// nodeAddresses are the node's internal and external IP addresses, and the
// address its kubelet was given, if any.
func nodeAddresses(node *corev1.Node) []string {
	var out []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			out = append(out, a.Address)
		}
	}
	for _, a := range strings.Split(node.Annotations[providedNodeIP], ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func fingerprint(node *corev1.Node) string {
	return strings.Join(nodeAddresses(node), ",") + "|" + node.Annotations[equinixv1.AnnotationDeviceID]
}
