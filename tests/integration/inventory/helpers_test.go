package inventory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

const (
	bmcUser     = "admin"
	bmcPassword = "Bmc-pw-never-shown-41"
	// ipmiPassword fits IPMI's 20 bytes.
	ipmiPassword = "Ipmi-pw-hidden-52"
	// bmcTimeout bounds one BMC request in these tests: a slow BMC is one
	// slower than that.
	bmcTimeout = time.Second
	ns         = seederv1alpha1.InventoryNamespace
)

func configure(c *config.Config) {
	c.BMCTimeout = bmcTimeout
	c.SeederCheckInterval = 500 * time.Millisecond
}

func newEnv(t *testing.T) *framework.Env {
	t.Helper()
	return framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, Configure: configure})
}

// restart stops the in-process controller and starts a new one, as a new
// pod would.
func restart(env *framework.Env) {
	env.StopController()
	env.StartController(env.Config(framework.Options{Mode: config.ModeSeeder, Configure: configure}))
}

// setPassword changes the Secret's password, as a user fixing it does.
func setPassword(t *testing.T, env *framework.Env, name, password string) {
	t.Helper()
	sec, err := env.Kube.CoreV1().Secrets(framework.BMCSecretNamespace).Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data[seederv1alpha1.SecretPasswordKey] = []byte(password)
	_, err = env.Kube.CoreV1().Secrets(framework.BMCSecretNamespace).Update(env.Ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// redfishBMC starts a Redfish BMC with the test's credentials.
func redfishBMC(t *testing.T) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	return redfishBMCWith(t, bmcsim.Options{})
}

// redfishBMCWith starts a Redfish BMC shaped by opts, with the test's
// credentials.
func redfishBMCWith(t *testing.T, opts bmcsim.Options) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	opts.Username, opts.Password = bmcUser, bmcPassword
	return framework.RedfishBMC(t, opts)
}

// hw is the addon's record of the Inventory's BMC.
func hw(env *framework.Env, name string) seederv1alpha1.HardwareStatus {
	env.T.Helper()
	if h := env.Inventory(name).Status.Hardware; h != nil {
		return *h
	}
	return seederv1alpha1.HardwareStatus{}
}

// hasCondition reports whether the Inventory's condition has status and
// reason.
func hasCondition(env *framework.Env, name, typ string, status metav1.ConditionStatus, reason string) bool {
	c := conditions.Get(env.Inventory(name).Status.Conditions, typ)
	return c != nil && c.Status == status && c.Reason == reason
}

// ready reports whether the Inventory is what Harvester requires before
// it offers power actions.
func ready(env *framework.Env, name string) bool {
	return env.Inventory(name).Status.Status == seederv1alpha1.InventoryNodeReady
}

// patchSpec merge-patches an Inventory's spec, as kubectl patch does.
func patchSpec(t *testing.T, env *framework.Env, name string, spec map[string]any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"spec": spec})
	require.NoError(t, err)
	_, err = env.Client.MetalV1alpha1().Inventories(ns).Patch(env.Ctx, name, types.MergePatchType, raw, metav1.PatchOptions{})
	require.NoError(t, err)
}

// requestPower asks for a power operation with the calls Harvester's
// powerAction makes (pkg/api/node formatter.go, v1.8.0): refused while the
// last request has no actionStatus; otherwise spec.powerActionRequested
// (an Update of the object read), then status.powerAction.lastJobName
// cleared on the object that Update returned (an UpdateStatus).
// tests/harvesterapi runs Harvester's own code; this is its calls for tests
// that need no Harvester binary. It returns the job name the status held
// before, for powerEnded.
//
// The controller writes the status at every poll (each second here), so
// the UpdateStatus can meet a conflict, which Harvester shows the user as
// an error. With another operation than the last, the spec's change is the
// request already (the controller takes a changed operation at a new
// generation): it stands. With the same operation nothing changed, and the
// user asks again, as this does.
func requestPower(t *testing.T, env *framework.Env, name, op string) string {
	t.Helper()
	before := lastJob(env, name)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		invs := env.Client.MetalV1alpha1().Inventories(ns)
		inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		if inv.Spec.PowerActionRequested != "" && inv.Status.PowerAction.LastActionStatus == "" {
			return fmt.Errorf("waiting for power action status for action %s for node %s to be populated", inv.Spec.PowerActionRequested, name)
		}
		inv.Spec.PowerActionRequested = op
		updated, err := invs.Update(env.Ctx, inv, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		updated.Status.PowerAction.LastJobName = ""
		_, err = invs.UpdateStatus(env.Ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && updated.Generation != inv.Generation {
			return nil
		}
		return err
	}))
	return before
}

// lastJob is the job name of the Inventory's last power request.
func lastJob(env *framework.Env, name string) string {
	return env.Inventory(name).Status.PowerAction.LastJobName
}

// powerEnded waits until the request made after job before ended and
// returns its actionStatus. The request's own job is waited for: when
// Harvester's clearing of lastJobName met a conflict, the status still
// shows the last request, ended, until the controller takes the new one.
func powerEnded(t *testing.T, env *framework.Env, name, before string) string {
	t.Helper()
	var status string
	env.Eventually(func() bool {
		pa := env.Inventory(name).Status.PowerAction
		status = pa.LastActionStatus
		return pa.LastJobName != "" && pa.LastJobName != before && status != ""
	}, time.Minute, "the power request of %s did not end", name)
	return status
}

func node(t *testing.T, env *framework.Env, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// forwarded lists the Events forwarded from machine events about a node
// (or an Inventory): each machine event ID with its Events' messages.
func forwarded(t *testing.T, env *framework.Env, subject string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range env.Events(subject) {
		if id := e.Annotations[equinixv1.AnnotationMachineEventID]; id != "" {
			out[id] = append(out[id], e.Message)
			require.EqualValues(t, 1, e.Count, "event %s counted again", e.Name)
		}
	}
	return out
}

// messages is every forwarded message, once per Event.
func messages(fw map[string][]string) []string {
	var out []string
	for _, ms := range fw {
		out = append(out, ms...)
	}
	return out
}

// countHolding counts the messages holding part.
func countHolding(msgs []string, part string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m, part) {
			n++
		}
	}
	return n
}
