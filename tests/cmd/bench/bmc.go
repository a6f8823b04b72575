package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// The BMC scenario's settings. The poll interval is longer than the
// driver's idle logout, so each poll opens and ends a session of its own,
// as the default hour does; --poll-interval is the development setting of
// a second, where every recheck was a login before.
const (
	bmcBenchPoll     = 40 * time.Second
	bmcBenchRecheck  = time.Second
	bmcBenchSettle   = 25 * time.Second
	bmcBenchQuiet    = 3 * time.Second
	bmcBenchUser     = "admin"
	bmcBenchPassword = "Bench-bmc-pw-6C1"
)

// bmcBench is one protocol's BMC, with the benchmark's view of it.
type bmcBench struct {
	protocol string
	node     string
	// connection is the Inventory's: Redfish on the responder's port, IPMI
	// on 623 with providerOptions.ipmitool.port naming the relay's.
	connection seederv1alpha1.Connection
	// counts reads what the BMC saw so far.
	counts func() bmcCounts
	// commands is how many power commands it got.
	commands func() int
	stop     func()
}

// bmcCounts is what a BMC saw: sessions opened, the most in use at once,
// every request (the session setup included for IPMI), and the requests
// in order as keys that are equal for a repetition (a GET of one resource,
// an IPMI command with its data; every POST and DELETE differs).
type bmcCounts struct {
	sessions, most, requests int
	keys                     []string
}

// logWindow writes a window's requests, for a look at what was repeated.
func (b *bench) logWindow(protocol, window string, before, after bmcCounts) {
	path := filepath.Join(b.env.workDir, "logs", "bmc-"+protocol+"-"+strings.ReplaceAll(window, " ", "-")+"-requests.log")
	var out strings.Builder
	for _, k := range after.keys[len(before.keys):] {
		out.WriteString(k + "\n")
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		b.log.Warnf("writing %s: %v", path, err)
	}
}

// window is what happened between two counts.
type window struct {
	sessions, most, requests, distinct int
	elapsed                            time.Duration
}

func (c bmcCounts) since(before bmcCounts, took time.Duration) window {
	distinct := map[string]bool{}
	for _, k := range c.keys[len(before.keys):] {
		distinct[k] = true
	}
	return window{sessions: c.sessions - before.sessions, most: c.most, requests: c.requests - before.requests,
		distinct: len(distinct), elapsed: took}
}

// runBMC measures, for a Redfish and an IPMI BMC, the sessions and the
// requests of the first contact, of a poll and of a power request.
func runBMC(ctx context.Context, b *bench) (result, error) {
	res := result{details: []string{bmcMethod()}}
	copts := b.controllerOptions(24 * time.Hour)
	copts.pollInterval = bmcBenchRecheck
	// The hardware mode, as the harvester-seeder Addon runs it: no Metal
	// API is called, so none is served.
	copts.extra = append([]string{"--mode", "hardware"}, copts.extra...)
	ctrl, err := b.env.startController(ctx, "bmc", "http://127.0.0.1:9/metal/v1", copts)
	if err != nil {
		return res, err
	}
	defer ctrl.stop()
	for _, start := range []func() (*bmcBench, error){redfishBench, ipmiBench} {
		bb, err := start()
		if errors.Is(err, ipmisim.ErrNotInstalled) {
			res.rows = append(res.rows, row{figure: "7. BMC sessions, IPMI", result: err.Error(), verdict: verdictError})
			continue
		}
		if err != nil {
			return res, err
		}
		rows, lines, err := b.measureBMC(ctx, bb)
		bb.stop()
		if err != nil {
			return res, fmt.Errorf("%s: %w", bb.protocol, err)
		}
		res.rows = append(res.rows, rows...)
		res.details = append(res.details, lines...)
	}
	return res, nil
}

func bmcMethod() string {
	return fmt.Sprintf("One node the addon did not provision per protocol, with Seeder's Inventory (events on) polled every %s "+
		"(longer than the 30 s a session is kept unused, so each poll opens and ends a session, as the default hour does), "+
		"the controller in the hardware mode at --poll-interval %s (the development setting). Redfish: the project's responder "+
		"(two CPUs, four DIMMs, two drives, a SEL), whose reboot (PowerCycle) takes %s to show; IPMI: OpenIPMI's ipmi_sim "+
		"through a relay that counts datagrams and sessions. The reboot is asked as Harvester's node action asks it; it ends "+
		"when the BMC took the command. Counted per window: sessions opened, the most in use at once, requests (IPMI: every "+
		"datagram to the BMC, the session setup included) and distinct requests (Redfish: a GET of one resource, a POST or a "+
		"DELETE; IPMI: a command with its data, from ipmi_sim's trace). **Minimum** = one session, its login and logout, and "+
		"each distinct request once: what a client that read nothing twice would send. A window ends %s after the last "+
		"request. Each window's requests are in logs/bmc-<protocol>-<window>-requests.log of the benchmark folder.",
		bmcBenchPoll, bmcBenchRecheck, bmcBenchSettle, bmcBenchQuiet)
}

// minimum is one session's setup and end, and each distinct request.
func (w window) minimum(protocol string) int {
	if protocol == "ipmi" {
		// Get Channel Authentication Capabilities, Open Session, RAKP 1
		// and 3 (its session setup), and Close Session; Set Session
		// Privilege Level is among the distinct commands.
		return 5 + w.distinct
	}
	return 2 + w.distinct // the login (POST) and the logout (DELETE)
}

func (b *bench) measureBMC(ctx context.Context, bb *bmcBench) ([]row, []string, error) {
	kube, client := b.env.kube, b.env.client
	if err := createBMCNode(ctx, b, bb); err != nil {
		return nil, nil, err
	}
	invs := client.MetalV1alpha1().Inventories(namespace)
	defer func() {
		_ = invs.Delete(context.Background(), bb.node, metav1.DeleteOptions{})
		_ = kube.CoreV1().Secrets(namespace).Delete(context.Background(), bb.node, metav1.DeleteOptions{})
		_ = kube.CoreV1().Nodes().Delete(context.Background(), bb.node, metav1.DeleteOptions{})
	}()
	start, c0 := time.Now(), bb.counts()
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bb.node}}
	inv.Spec.BaseboardManagementSpec.Connection = bb.connection
	inv.Spec.BaseboardManagementSpec.Connection.AuthSecretRef = corev1.SecretReference{Namespace: namespace, Name: bb.node}
	inv.Spec.Events = seederv1alpha1.Events{Enabled: true, PollingInterval: bmcBenchPoll.String()}
	if _, err := invs.Create(ctx, inv, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	first, err := b.pollWindow(ctx, bb, time.Time{})
	if err != nil {
		return nil, nil, fmt.Errorf("first contact: %w", err)
	}
	c := bb.counts()
	firstW := c.since(c0, time.Since(start))
	b.logWindow(bb.protocol, "first-contact", c0, c)
	polledAt := first
	start, c1 := time.Now(), bb.counts()
	if _, err := b.pollWindow(ctx, bb, polledAt); err != nil {
		return nil, nil, fmt.Errorf("second poll: %w", err)
	}
	c = bb.counts()
	pollW := c.since(c1, time.Since(start))
	b.logWindow(bb.protocol, "poll", c1, c)
	start, c2 := time.Now(), bb.counts()
	if err := b.rebootWindow(ctx, bb); err != nil {
		return nil, nil, fmt.Errorf("reboot: %w", err)
	}
	c = bb.counts()
	powerW := c.since(c2, time.Since(start))
	b.logWindow(bb.protocol, "reboot", c2, c)

	name := map[string]string{"redfish": "Redfish", "ipmi": "IPMI"}[bb.protocol]
	var rows []row
	lines := []string{"", fmt.Sprintf("**%s**", name), "",
		"| Window | Took | Sessions (most at once) | Requests | Distinct | Minimum | Ratio |", "|---|---|---|---|---|---|---|"}
	for _, w := range []struct {
		what string
		w    window
	}{{"first contact (facts and a poll)", firstW}, {"a poll", pollW}, {"a power request (reboot)", powerW}} {
		least := w.w.minimum(bb.protocol)
		ratio := float64(w.w.requests) / float64(least)
		lines = append(lines, fmt.Sprintf("| %s | %s | %d (%d) | %d | %d | %d | %.2f× |", w.what, seconds(w.w.elapsed),
			w.w.sessions, w.w.most, w.w.requests, w.w.distinct, least, ratio))
		if w.what == "first contact (facts and a poll)" {
			continue
		}
		verdict := verdictPass
		if w.w.sessions > 1 || w.w.most > 1 {
			verdict = verdictMiss
		}
		rows = append(rows, row{figure: fmt.Sprintf("7. BMC, %s: %s", name, w.what),
			result: fmt.Sprintf("%d session(s), %d requests vs minimum %d (1 session) → %.2f×", w.w.sessions, w.w.requests, least, ratio),
			target: "1 session, never 2 at once", verdict: verdict})
	}
	b.log.Infof("BMC %s: first contact %+v, poll %+v, reboot %+v", bb.protocol, firstW, pollW, powerW)
	return rows, lines, nil
}

// pollWindow waits for a poll after the one at after, then for quiet.
func (b *bench) pollWindow(ctx context.Context, bb *bmcBench, after time.Time) (time.Time, error) {
	var polled time.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*bmcBenchPoll, true, func(ctx context.Context) (bool, error) {
		inv, err := b.env.client.MetalV1alpha1().Inventories(namespace).Get(ctx, bb.node, metav1.GetOptions{})
		if err != nil || inv.Status.Hardware == nil || inv.Status.Hardware.LastPolled == nil || !inv.Status.Hardware.LastPolled.After(after) {
			return false, nil
		}
		polled = inv.Status.Hardware.LastPolled.Time
		return true, nil
	})
	if err != nil {
		return polled, err
	}
	return polled, waitBMCQuiet(ctx, bb)
}

// rebootWindow asks for a reboot in maintenance mode with the calls
// Harvester's node action makes (the spec, then lastJobName cleared), plays
// the kubelet once the BMC got the command, and waits until the request
// ended.
func (b *bench) rebootWindow(ctx context.Context, bb *bmcBench) error {
	kube := b.env.kube
	invs := b.env.client.MetalV1alpha1().Inventories(namespace)
	patch := `{"metadata":{"annotations":{"harvesterhci.io/maintain-status":"completed"}}}`
	if _, err := kube.CoreV1().Nodes().Patch(ctx, bb.node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	inv, err := invs.Get(ctx, bb.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	inv.Spec.PowerActionRequested = seederv1alpha1.PowerOperationReboot
	if inv, err = invs.Update(ctx, inv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	inv.Status.PowerAction.LastJobName = ""
	if _, err := invs.UpdateStatus(ctx, inv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	commands := bb.commands()
	ready := false
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !ready && bb.commands() > commands {
			ready = true
			if err := nodeReady(ctx, b, bb.node); err != nil {
				return false, err
			}
		}
		inv, err := invs.Get(ctx, bb.node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pa := inv.Status.PowerAction
		return pa.LastJobName != "" && pa.LastActionStatus == seederv1alpha1.ActionStatusComplete, nil
	})
	if err != nil {
		return err
	}
	return waitBMCQuiet(ctx, bb)
}

// waitBMCQuiet waits until the BMC got no request for bmcBenchQuiet.
func waitBMCQuiet(ctx context.Context, bb *bmcBench) error {
	last, since := bb.counts().requests, time.Now()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		if n := bb.counts().requests; n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= bmcBenchQuiet, nil
	})
}
