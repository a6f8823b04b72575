package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/bmcsim/ipmisim"
)

// The BMC scenario's settings. The poll interval is longer than the
// driver's idle logout, so each poll opens and ends a session of its own,
// as the default 15 minutes does; --poll-interval is the development
// setting of a second, where every recheck was a login before.
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
	endpoint v1.BMCEndpoint
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
	fl, err := b.startFleet(ctx, "bmc", b.metalOptions(10*time.Second), copts)
	if err != nil {
		return res, err
	}
	defer fl.stop()
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
	return fmt.Sprintf("One node the addon did not provision per protocol, with a BMCInventory polled every %s (longer "+
		"than the 30 s a session is kept unused, so each poll opens and ends a session, as the default 15 minutes does), "+
		"the controller at --poll-interval %s (the development setting, where a power action was rechecked, with a login, "+
		"every second). Redfish: the project's responder (two CPUs, four DIMMs, two drives, a SEL), whose reboot (PowerCycle) "+
		"takes %s to show; IPMI: OpenIPMI's ipmi_sim through a relay that counts datagrams and sessions. Counted per window: "+
		"sessions opened, the most in use at once, requests (IPMI: every datagram to the BMC, the session setup included) and "+
		"distinct requests (Redfish: a GET of one resource, a POST or a DELETE; IPMI: a command with its data, from ipmi_sim's "+
		"trace). **Minimum** = one session, its login and logout, each distinct request once, and for the reboot the rereads "+
		"of the power state that show the server on at a 10 s pace (3 for the Redfish responder's 25 s, 1 for ipmi_sim): what "+
		"a client that read nothing twice would send. A window ends %s after the last request. Each window's requests are "+
		"in logs/bmc-<protocol>-<window>-requests.log of the benchmark folder.",
		bmcBenchPoll, bmcBenchRecheck, bmcBenchSettle, bmcBenchQuiet)
}

// minimum is one session's setup and end, each distinct request, and the
// rereads of the power state a power action needs to see its effect.
func (w window) minimum(protocol string, rereads int) int {
	if protocol == "ipmi" {
		// Get Channel Authentication Capabilities, Open Session, RAKP 1
		// and 3 (its session setup), and Close Session; Set Session
		// Privilege Level is among the distinct commands.
		return 5 + w.distinct + rereads
	}
	return 2 + w.distinct + rereads // the login (POST) and the logout (DELETE)
}

// rebootRereads is how many times a client that checks every 10 s must
// read the power state again after a reboot to see the server on: the
// Redfish responder shows PoweringOn for bmcBenchSettle, ipmi_sim's cycle
// is over at the next read.
func rebootRereads(protocol string) int {
	if protocol == "ipmi" {
		return 1
	}
	return int(bmcBenchSettle/(10*time.Second)) + 1
}

func (b *bench) measureBMC(ctx context.Context, bb *bmcBench) ([]row, []string, error) {
	kube, client := b.env.kube, b.env.client
	if err := createBMCNode(ctx, b, bb); err != nil {
		return nil, nil, err
	}
	defer func() {
		_ = client.EquinixV1().BMCInventories().Delete(context.Background(), bb.node, metav1.DeleteOptions{})
		_ = kube.CoreV1().Secrets(namespace).Delete(context.Background(), bb.node, metav1.DeleteOptions{})
		_ = kube.CoreV1().Nodes().Delete(context.Background(), bb.node, metav1.DeleteOptions{})
	}()
	start, c0 := time.Now(), bb.counts()
	inv := &v1.BMCInventory{ObjectMeta: metav1.ObjectMeta{Name: bb.node}, Spec: v1.BMCInventorySpec{
		NodeName: bb.node, BMC: bb.endpoint, CredentialsSecret: v1.SecretReference{Name: bb.node},
		PollInterval: &metav1.Duration{Duration: bmcBenchPoll}}}
	if _, err := client.EquinixV1().BMCInventories().Create(ctx, inv, metav1.CreateOptions{}); err != nil {
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
		what    string
		w       window
		rereads int
	}{{"first contact (facts and a poll)", firstW, 0}, {"a poll", pollW, 0}, {"a power request (reboot)", powerW, rebootRereads(bb.protocol)}} {
		least := w.w.minimum(bb.protocol, w.rereads)
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
		inv, err := b.env.client.EquinixV1().BMCInventories().Get(ctx, bb.node, metav1.GetOptions{})
		if err != nil || inv.Status.LastPolled == nil || !inv.Status.LastPolled.After(after) {
			return false, nil
		}
		polled = inv.Status.LastPolled.Time
		return true, nil
	})
	if err != nil {
		return polled, err
	}
	return polled, waitBMCQuiet(ctx, bb)
}

// rebootWindow asks for a reboot in maintenance mode, plays the kubelet
// once the BMC got the command, and waits until the request succeeded.
func (b *bench) rebootWindow(ctx context.Context, bb *bmcBench) error {
	kube, client := b.env.kube, b.env.client
	patch := `{"metadata":{"annotations":{"harvesterhci.io/maintain-status":"completed"}}}`
	if _, err := kube.CoreV1().Nodes().Patch(ctx, bb.node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	spec, _ := json.Marshal(map[string]any{"spec": map[string]any{"rebootRequestedAt": time.Now().UTC().Format(time.RFC3339)}})
	if _, err := client.EquinixV1().BMCInventories().Patch(ctx, bb.node, types.MergePatchType, spec, metav1.PatchOptions{}); err != nil {
		return err
	}
	commands := bb.commands()
	ready := false
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !ready && bb.commands() > commands {
			ready = true
			if err := nodeReady(ctx, b, bb.node); err != nil {
				return false, err
			}
		}
		inv, err := client.EquinixV1().BMCInventories().Get(ctx, bb.node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		la := inv.Status.LastPowerAction
		return la != nil && la.Action == v1.PowerActionReboot && la.Result == v1.PowerResultSucceeded, nil
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
