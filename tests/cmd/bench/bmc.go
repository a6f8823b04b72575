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
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// The BMC scenario's settings. The poll interval is longer than the
// driver's idle logout, so each poll opens and ends a session of its own,
// as the default hour does; --poll-interval is the development setting of
// a second, where every recheck was a login before.
const (
	bmcBenchPoll    = 40 * time.Second
	bmcBenchRecheck = time.Second
	bmcBenchSettle  = 25 * time.Second
	bmcBenchQuiet   = 3 * time.Second
	// bmcBenchFresh is the controller's --bmc-power-freshness here: longer
	// than the longest gap between two polls (one and a half intervals, see
	// the spread), so that the polls read the power and no read of its own
	// falls in their windows, and than the idle logout, so that a power
	// read between polls finds no session, as at the default 3m.
	bmcBenchFresh = 75 * time.Second
	// bmcDefaultFresh and bmcUIInterval are the production settings the
	// hourly figure is for: the default --bmc-power-freshness and the UI's
	// default pollingInterval.
	bmcDefaultFresh  = 3 * time.Minute
	bmcUIInterval    = time.Hour
	bmcBenchUser     = "admin"
	bmcBenchPassword = "Bench-bmc-pw-6C1"
	// bmcPollTarget is how far above the minimum a poll may go.
	bmcPollTarget = 1.15
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
	name                               string
	sessions, most, requests, distinct int
	elapsed                            time.Duration
	// writes are the apiserver's write requests meanwhile.
	writes map[string]float64
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
	// The seeder mode, as the harvester-seeder Addon runs it: no Metal
	// API is called, so none is served.
	copts.extra = append([]string{"--mode", "seeder", "--bmc-power-freshness", bmcBenchFresh.String()}, copts.extra...)
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
		rows, lines, err := b.measureBMC(ctx, ctrl, bb)
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
		"the controller in the seeder mode at --poll-interval %s (the development setting) and --bmc-power-freshness %s. "+
		"Redfish: the project's responder "+
		"(two CPUs, four DIMMs, two drives, a SEL), whose reboot (PowerCycle) takes %s to show; IPMI: OpenIPMI's ipmi_sim "+
		"through a relay that counts datagrams and sessions. The reboot is asked as Harvester's node action asks it; it ends "+
		"when the BMC shows the server on again. Then the Inventory's pollingInterval is set to the UI's %s, and the second read of "+
		"the power alone after it (--bmc-power-freshness after the last; the first stamps the conditions with the new "+
		"generation, one write) is a window of its own. The measured poll is the third: the second may come within the idle "+
		"logout of the first contact. Polls are the controller's metric "+
		"equinix_addon_hardware_last_poll_timestamp_seconds (a poll that finds nothing new writes no status). Counted per window: "+
		"sessions opened, the most in use at once, requests (IPMI: every "+
		"datagram to the BMC, the session setup included), distinct requests (Redfish: a GET of one resource, a POST or a "+
		"DELETE; IPMI: a command with its data, from ipmi_sim's trace) and the apiserver's write requests (every client's; none "+
		"but the controller's writes in the window). **Minimum** = one session, its login and logout, and "+
		"each distinct request once: what a client that read nothing twice would send. A window ends %s after the last "+
		"request. Each window's requests are in logs/bmc-<protocol>-<window>-requests.log of the benchmark folder. **Per hour** "+
		"at the UI's default interval (%s) and the default --bmc-power-freshness (%s): one poll and %d reads of the power "+
		"alone, from the windows' counts.",
		bmcBenchPoll, bmcBenchRecheck, bmcBenchFresh, bmcBenchSettle, bmcUIInterval, bmcBenchQuiet, bmcUIInterval, bmcDefaultFresh,
		powerReadsPerHour())
}

// powerReadsPerHour is how many reads of the power alone fall between two
// polls an hour apart: one every --bmc-power-freshness after the poll's own.
func powerReadsPerHour() int {
	return int(bmcUIInterval/bmcDefaultFresh) - 1
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

func (b *bench) measureBMC(ctx context.Context, ctrl *controller, bb *bmcBench) ([]row, []string, error) {
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
	w := &bmcWindows{b: b, ctrl: ctrl, bb: bb}
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bb.node}}
	inv.Spec.BaseboardManagementSpec.Connection = bb.connection
	inv.Spec.BaseboardManagementSpec.Connection.AuthSecretRef = corev1.SecretReference{Namespace: namespace, Name: bb.node}
	inv.Spec.Events = seederv1alpha1.Events{Enabled: true, PollingInterval: bmcBenchPoll.String()}
	var first time.Time
	firstW, err := w.measure(ctx, "first-contact", func() error {
		if _, err := invs.Create(ctx, inv, metav1.CreateOptions{}); err != nil {
			return err
		}
		var err error
		first, err = b.pollWindow(ctx, ctrl, bb, time.Time{})
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("first contact: %w", err)
	}
	// The poll after the first contact may come within the idle logout
	// (the spread puts it half an interval to one and a half after) and
	// find its session open: the one after it is an interval later, and
	// opens its own, as at the UI's hour.
	second, err := b.pollWindow(ctx, ctrl, bb, first)
	if err != nil {
		return nil, nil, fmt.Errorf("second poll: %w", err)
	}
	pollW, err := w.measure(ctx, "poll", func() error {
		_, err := b.pollWindow(ctx, ctrl, bb, second)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("third poll: %w", err)
	}
	powerW, err := w.measure(ctx, "reboot", func() error { return b.rebootWindow(ctx, bb) })
	if err != nil {
		return nil, nil, fmt.Errorf("reboot: %w", err)
	}
	if err := b.hourlyInterval(ctx, bb); err != nil {
		return nil, nil, fmt.Errorf("the UI's interval: %w", err)
	}
	// The first contact after a change of the spec stamps the conditions
	// with its generation, one write; the read after it is the window.
	if err := b.powerReadWindow(ctx, bb); err != nil {
		return nil, nil, fmt.Errorf("a read of the power: %w", err)
	}
	readW, err := w.measure(ctx, "power-read", func() error { return b.powerReadWindow(ctx, bb) })
	if err != nil {
		return nil, nil, fmt.Errorf("a read of the power: %w", err)
	}
	return bmcRows(bb, pollW, powerW, readW), w.lines(firstW, pollW, powerW, readW), nil
}

// bmcWindows measures windows of one BMC: what it saw, and the apiserver's
// writes meanwhile.
type bmcWindows struct {
	b    *bench
	ctrl *controller
	bb   *bmcBench
}

// measure runs what makes a window happen and counts it.
func (w *bmcWindows) measure(ctx context.Context, name string, run func() error) (window, error) {
	before, err := w.b.env.apiserverMetrics(ctx)
	if err != nil {
		return window{}, err
	}
	start, c0 := time.Now(), w.bb.counts()
	if err := run(); err != nil {
		return window{}, err
	}
	c := w.bb.counts()
	out := c.since(c0, time.Since(start))
	w.b.logWindow(w.bb.protocol, name, c0, c)
	after, err := w.b.env.apiserverMetrics(ctx)
	if err != nil {
		return window{}, err
	}
	out.name = name
	out.writes = writeRequests(requestsByResource(after, before))
	return out, nil
}

// writeRequests keeps the writes among apiserver requests by resource and
// verb, but the Leases: the cluster's own (its apiserver's identity, the
// controller manager's) renew every few seconds whatever the addon does.
func writeRequests(all map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range all {
		if !strings.HasSuffix(k, " get") && !strings.HasSuffix(k, " list") && !strings.HasPrefix(k, "leases ") {
			out[k] = v
		}
	}
	return out
}

func (w *bmcWindows) lines(windows ...window) []string {
	name := protocolNames[w.bb.protocol]
	out := []string{"", fmt.Sprintf("**%s**", name), "",
		"| Window | Took | Sessions (most at once) | Requests | Distinct | Minimum | Ratio | Apiserver writes |", "|---|---|---|---|---|---|---|---|"}
	for _, x := range windows {
		least := x.minimum(w.bb.protocol)
		out = append(out, fmt.Sprintf("| %s | %s | %d (%d) | %d | %d | %d | %.2f× | %s |", windowTitles[x.name], seconds(x.elapsed),
			x.sessions, x.most, x.requests, x.distinct, least, float64(x.requests)/float64(least), formatCounts(x.writes)))
	}
	w.b.log.Infof("BMC %s: %+v", w.bb.protocol, windows)
	return out
}

var windowTitles = map[string]string{
	"first-contact": "first contact (facts and a poll)", "poll": "a poll", "reboot": "a power request (reboot)",
	"power-read": "a read of the power alone",
}

// bmcRows are figure 7's rows for one BMC: a poll and a power request
// against their minimum, the read of the power alone, and what an hour at
// the UI's default interval costs.
func bmcRows(bb *bmcBench, poll, power, read window) []row {
	name := protocolNames[bb.protocol]
	var rows []row
	for _, x := range []window{poll, power} {
		least := x.minimum(bb.protocol)
		ratio := float64(x.requests) / float64(least)
		target, ok := "1 session, never 2 at once", x.sessions <= 1 && x.most <= 1
		if x.name == "poll" {
			target = fmt.Sprintf("1 session; ≤ %.2f× the minimum; 0 apiserver writes", bmcPollTarget)
			ok = ok && ratio <= bmcPollTarget && sumCounts(x.writes) == 0
		}
		rows = append(rows, row{figure: fmt.Sprintf("7. BMC, %s: %s", name, windowTitles[x.name]),
			result: fmt.Sprintf("%d session(s), %d requests vs minimum %d (1 session) → %.2f×; apiserver writes %.0f", x.sessions, x.requests,
				least, ratio, sumCounts(x.writes)),
			target: target, verdict: passOrMiss(ok)})
	}
	n := powerReadsPerHour()
	rows = append(rows, row{figure: fmt.Sprintf("7. BMC, %s: %s", name, windowTitles[read.name]),
		result: fmt.Sprintf("%d session(s), %d requests; apiserver writes %.0f", read.sessions, read.requests, sumCounts(read.writes)),
		target: "at most a session's setup, the read and its end; 0 apiserver writes", verdict: passOrMiss(sumCounts(read.writes) == 0 && read.sessions <= 1)})
	rows = append(rows, row{figure: fmt.Sprintf("7. BMC, %s: per hour at the UI's interval (%s), power fresh within %s", name, bmcUIInterval, bmcDefaultFresh),
		result: fmt.Sprintf("**%d sessions, %d requests** (a poll: %d and %d; %d reads of the power: %d and %d each)",
			poll.sessions+n*read.sessions, poll.requests+n*read.requests, poll.sessions, poll.requests, n, read.sessions, read.requests),
		target: "measured", verdict: "measured"})
	return rows
}

func sumCounts(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// pollWindow waits for a poll after the one at after (the controller's
// metric of the node's last poll; a poll that finds nothing new writes no
// status), then for quiet.
func (b *bench) pollWindow(ctx context.Context, ctrl *controller, bb *bmcBench, after time.Time) (time.Time, error) {
	var polled time.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*bmcBenchPoll, true, func(ctx context.Context) (bool, error) {
		ms, err := ctrl.scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // the controller answers its next scrape
		}
		at := ms.sum(metricLastPoll, func(l map[string]string) bool { return l["node"] == bb.node })
		if at == 0 || !time.Unix(int64(at), 0).After(after) {
			return false, nil
		}
		polled = time.Unix(int64(at), 0)
		return true, nil
	})
	if err != nil {
		return polled, err
	}
	return polled, waitBMCQuiet(ctx, bb)
}

// hourlyInterval sets the Inventory's pollingInterval to the UI's default,
// and waits until the controller took it and the BMC is quiet.
func (b *bench) hourlyInterval(ctx context.Context, bb *bmcBench) error {
	invs := b.env.client.MetalV1alpha1().Inventories(namespace)
	patch := fmt.Sprintf(`{"spec":{"events":{"pollingInterval":%q}}}`, bmcUIInterval)
	inv, err := invs.Patch(ctx, bb.node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := invs.Get(ctx, bb.node, metav1.GetOptions{})
		return err == nil && got.Status.Hardware != nil && got.Status.Hardware.ObservedGeneration == inv.Generation, nil
	})
	if err != nil {
		return err
	}
	// The power request's session is logged out once it sat unused for
	// the idle logout: that is no part of the next window.
	return waitBMCQuietFor(ctx, bb, bmcdriver.IdleLogout+bmcBenchQuiet)
}

// powerReadWindow waits for the next read of the power alone, which
// --bmc-power-freshness after the last one brings, then for quiet.
func (b *bench) powerReadWindow(ctx context.Context, bb *bmcBench) error {
	before := bb.counts().requests
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*bmcBenchFresh, true, func(context.Context) (bool, error) {
		return bb.counts().requests > before, nil
	})
	if err != nil {
		return err
	}
	return waitBMCQuiet(ctx, bb)
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
	return waitBMCQuietFor(ctx, bb, bmcBenchQuiet)
}

// waitBMCQuietFor waits until the BMC got no request for quiet.
func waitBMCQuietFor(ctx context.Context, bb *bmcBench, quiet time.Duration) error {
	last, since := bb.counts().requests, time.Now()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute+quiet, true, func(context.Context) (bool, error) {
		if n := bb.counts().requests; n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet, nil
	})
}
