package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A demo shows one thing the addon does on the local environment, which
// is torn down after it. Adding one is a value in demos, its run in a file
// of its own, and a Makefile target `demo-<name>: ./scripts/devenv demo
// <name>` (with a line in docs/development.md's table).
type demo struct {
	// name is what `devenv demo <name>` takes; the first demo runs when
	// none is named.
	name string
	// shows completes "demo finished: ", once the demo worked.
	shows string
	// run takes the running environment, says what it does step by step
	// and records in the summary what the user should look at.
	run func(ctx context.Context, d *demoRun) error
	// needs, when set, says what the demo cannot run without (tools not
	// installed), before anything starts.
	needs func() error
}

var demos = []demo{
	{name: "pool", shows: "the seed README's pool became ready", run: poolDemo},
	{name: "bmc", run: bmcDemo,
		shows: "a node the addon did not provision got its facts, an event and a power cycle through its BMC, as Harvester's UI asks"},
	{name: "owned", run: ownedVMDemo, needs: vmRackNeeds,
		shows: "a pool of two on servers you own (QEMU machines behind ipmi_sim) network-booted with real iPXE, installed and joined through their BMCs, then released them"},
	{name: "owned-sim", run: ownedSimDemo,
		shows: "a pool of two on servers you own (simulated Redfish BMCs) network-booted, installed and joined through their BMCs, then released them"},
}

func demoNames() []string {
	var names []string
	for _, d := range demos {
		names = append(names, d.name)
	}
	return names
}

func demoNamed(name string) (demo, bool) {
	for _, d := range demos {
		if d.name == name {
			return d, true
		}
	}
	return demo{}, false
}

// demoRun is one demo on its environment.
type demoRun struct {
	*env
	summary strings.Builder
}

// show runs kubectl with args, printing the command (with note, a comment
// for the reader, when not empty) and its output, and keeps both for the
// summary printed after the teardown.
func (d *demoRun) show(ctx context.Context, note string, args ...string) error {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	line := "$ kubectl " + strings.Join(quoted, " ")
	if note != "" {
		line += "   # " + note
	}
	var out strings.Builder
	if err := d.kubectl(ctx, &out, args...); err != nil {
		return err
	}
	text := line + "\n" + out.String()
	fmt.Print(text)
	d.summary.WriteString(text)
	return nil
}

// shellQuote quotes an argument the way a user would type it into a shell.
func shellQuote(arg string) string {
	if strings.ContainsAny(arg, " {}\"'$*\\") {
		return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
	}
	return arg
}

// note adds lines of the demo's own to the summary, and prints them.
func (d *demoRun) note(format string, args ...any) {
	text := fmt.Sprintf(format, args...) + "\n"
	fmt.Print(text)
	d.summary.WriteString(text)
}

// runDemo starts the environment, runs the demo and tears down; on
// success it ends with the demo's summary, on failure with the
// controller's log tail.
func runDemo(ctx context.Context, s settings, dm demo) (err error) {
	// Refuse before arming the teardown: it must never stop a `make
	// dev-up` environment someone is using.
	if running(s.dir) {
		return fmt.Errorf("a local environment is running (state in %s); run: make dev-down", s.dir)
	}
	if dm.needs != nil {
		if err := dm.needs(); err != nil {
			return fmt.Errorf("demo %s: %w", dm.name, err)
		}
	}
	d := &demoRun{}
	defer func() {
		if err != nil {
			say("demo failed; controller log tail:")
			fmt.Fprintln(os.Stderr, tail(filepath.Join(s.dir, "controller.log"), 30))
		}
		say("tearing down")
		if downErr := down(s.dir); downErr != nil && err == nil {
			err = downErr
		}
		if err == nil {
			say("demo finished: %s", dm.shows)
			fmt.Print(d.summary.String())
		}
	}()
	if d.env, err = up(ctx, s, false); err != nil {
		return err
	}
	return dm.run(ctx, d)
}
