package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// make demo-owned, end to end, as a user runs it (scripts/devenv builds
// the binaries and runs `devenv demo owned`; here the test builds them):
// three QEMU machines behind ipmi_sim, the controller in the seeder mode
// with owned pools. The demo fails unless the example pool becomes ready
// with two servers whose real iPXE fetched the chain, the installer and
// its kernel from the boot endpoint (only the command line that kernel
// prints sets the played install going), and unless scaling it to 0
// switches both machines off (their QEMU ended), deletes the Nodes and
// frees the Inventories. A network boot that finds nothing to boot fails
// it at once.
func TestOwnedDemoOnQEMUMachines(t *testing.T) {
	if err := vmRackNeeds(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
	bin := buildDemoBinaries(t)
	dm, ok := demoNamed("owned")
	require.True(t, ok)
	var summary string
	run := dm.run
	dm.run = func(ctx context.Context, d *demoRun) error {
		err := run(ctx, d)
		summary = d.summary.String()
		return err
	}
	// The settings as `devenv --dir ... --bin-dir ... demo owned` has
	// them: the state in the test's folder (named for the test), the
	// binaries the test built.
	var s settings
	set := flag.NewFlagSet("devenv", flag.ContinueOnError)
	for _, f := range settingFlags(&s) {
		require.NoError(t, f.Apply(set))
	}
	require.NoError(t, set.Parse([]string{"--dir", filepath.Join(t.TempDir(), "devenv-owned"), "--bin-dir", bin}))
	// What the demo shows goes to a file, and its end to a failed test's
	// output: its printed examples' comment lines would read as package
	// headers in scripts/test's summary.
	shown := filepath.Join(t.TempDir(), "demo.out")
	out, err := os.Create(shown)
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = out
	err = runDemo(context.Background(), s, dm)
	os.Stdout = stdout
	_ = out.Close()
	if err != nil {
		b, _ := os.ReadFile(shown)
		t.Logf("what the demo showed (end):\n%s", b[max(0, len(b)-8000):])
	}
	require.NoError(t, err)
	t.Logf("the demo's summary:\n%s", summary)
	assert.Contains(t, summary, "pool rack-a ready in")
	assert.Contains(t, summary, "servers released in")
	for _, server := range []string{"rack-a-u01", "rack-a-u02", "rack-a-u03"} {
		assert.Contains(t, summary, "BMC of "+server+": power off (no QEMU runs)")
	}
}

// buildDemoBinaries builds the controller and the Metal simulator, which
// the environment runs, with the flags the test's own packages were built
// with (scripts/build's would compile their dependencies again).
func buildDemoBinaries(t *testing.T) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	bin := t.TempDir()
	for name, pkg := range map[string]string{
		"harvester-equinix-addon":           ".",
		"harvester-equinix-addon-simulator": "./tests/cmd/simulator",
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s: %s", pkg, out)
	}
	return bin
}
