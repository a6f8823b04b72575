package main

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// Verdicts of a table row.
const (
	verdictPass  = "✅ met"
	verdictMiss  = "❌ missed"
	verdictInfo  = "measured"
	verdictError = "⚠️ error"
)

// row is one line of the summary table.
type row struct {
	figure  string
	result  string
	target  string
	verdict string
}

// result is what one scenario contributes: rows of the summary table and a
// section of details below it.
type result struct {
	title   string
	rows    []row
	details []string
	elapsed time.Duration
}

// machine describes where the figures were taken.
type machine struct {
	cpus      int
	cpuModel  string
	load      string
	goVersion string
	commit    string
	kernel    string
}

func describeMachine(ctx context.Context) (machine, error) {
	m := machine{cpus: runtime.NumCPU(), goVersion: runtime.Version()}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return m, fmt.Errorf("reading /proc: %w", err)
	}
	if infos, err := fs.CPUInfo(); err == nil && len(infos) > 0 {
		m.cpuModel = infos[0].ModelName
	}
	if l, err := fs.LoadAvg(); err == nil {
		m.load = fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
	}
	m.commit = gitOutput(ctx, "rev-parse", "--short", "HEAD")
	if gitOutput(ctx, "status", "--porcelain", "--untracked-files=no") != "" {
		m.commit += " (with uncommitted changes)"
	}
	m.kernel = strings.TrimSpace(commandOutput(ctx, "uname", "-sr"))
	return m, nil
}

func gitOutput(ctx context.Context, args ...string) string {
	return strings.TrimSpace(commandOutput(ctx, "git", args...))
}

// commandOutput is best effort: the description says "unknown" rather than
// failing the benchmark.
func commandOutput(ctx context.Context, name string, args ...string) string {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "unknown"
	}
	return string(out)
}

// report gathers every scenario's result.
type report struct {
	machine  machine
	started  time.Time
	duration time.Duration
	results  []result
}

func (r *report) add(res result) { r.results = append(r.results, res) }

// markdown renders the summary table, then each scenario's details.
func (r *report) markdown() string {
	var b strings.Builder
	m := r.machine
	fmt.Fprintf(&b, "## Benchmark results\n\n")
	fmt.Fprintf(&b, "`make bench` on %s: %d CPUs (%s), load average at start %s, %s, %s, commit %s. "+
		"Whole run: %s.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), m.cpus, m.cpuModel, m.load, m.kernel, m.goVersion, m.commit,
		r.duration.Round(time.Second))
	b.WriteString("| Figure | Result | Target | Verdict |\n|---|---|---|---|\n")
	for _, res := range r.results {
		for _, rw := range res.rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(rw.figure), cell(rw.result), cell(rw.target), cell(rw.verdict))
		}
	}
	for _, res := range r.results {
		fmt.Fprintf(&b, "\n### %s (%s)\n\n", res.title, res.elapsed.Round(time.Second))
		for _, line := range res.details {
			b.WriteString(line)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// cell keeps a value from breaking the markdown table.
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// seconds renders a duration in seconds with one decimal.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// ms renders a latency in seconds as milliseconds.
func ms(s float64) string {
	if math.IsNaN(s) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f ms", s*1000)
}

// mib renders bytes as MiB.
func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// pct renders a share as a percentage.
func pct(part, whole float64) string {
	if whole <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*part/whole)
}

// passOrMiss is the verdict of a target.
func passOrMiss(met bool) string {
	if met {
		return verdictPass
	}
	return verdictMiss
}
