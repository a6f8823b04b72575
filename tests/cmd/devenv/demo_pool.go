package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// poolDemo applies the seed README's InstancePool (the chart's example),
// follows it to ready with the simulator's account of each device, shows
// the pool, its Instance and the joined node, and deletes it.
func poolDemo(ctx context.Context, d *demoRun) error {
	example := filepath.Join(d.root, "charts", "harvester-equinix-addon", "examples", "instancepool.yaml")
	raw, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	var pool equinixv1.InstancePool
	if err := yaml.Unmarshal(raw, &pool); err != nil {
		return fmt.Errorf("%s: %w", example, err)
	}
	say("applying the seed README's InstancePool")
	fmt.Print(string(raw))
	if err := d.kubectl(ctx, nil, "apply", "-f", example); err != nil {
		return err
	}

	say("waiting for the pool to become ready (devices: queued -> provisioning -> active -> reinstall -> node join)")
	simLog := &logFollower{path: d.simulator.logPath}
	start := time.Now()
	err = waitFor(ctx, 5*time.Minute, 2*time.Second, "the pool was not ready", func() error {
		for _, msg := range simLog.messages() {
			fmt.Printf("    metal: %s\n", msg)
		}
		status := "pending"
		if p, err := d.client.EquinixV1().InstancePools().Get(ctx, pool.Name, metav1.GetOptions{}); err == nil && p.Status.Status != "" {
			status = p.Status.Status
		}
		var instances []string
		if list, err := d.client.EquinixV1().Instances().List(ctx, metav1.ListOptions{}); err == nil {
			for _, inst := range list.Items {
				instances = append(instances, inst.Name+" "+inst.Status.Status)
			}
		}
		fmt.Printf("    %3ds  pool: %-12s instance: %s\n", int(time.Since(start).Seconds()), status, strings.Join(instances, ", "))
		if status != equinixv1.PoolPhaseReady {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, step := range [][]string{
		{"", "get", "instancepool"},
		{"", "get", "instance"},
		{"joined through the simulated install", "get", "nodes"},
	} {
		if err := d.show(ctx, step[0], step[1:]...); err != nil {
			return err
		}
	}

	say("deleting the pool (maintenance mode, device deleted, then the node)")
	if err := d.kubectl(ctx, nil, "delete", "instancepool", pool.Name, "--timeout=120s"); err != nil {
		return err
	}
	left, err := d.client.EquinixV1().Instances().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(left.Items) > 0 {
		return fmt.Errorf("%d Instances remain after the pool was deleted", len(left.Items))
	}
	return nil
}

// logMessage is the message of a logrus text line.
var logMessage = regexp.MustCompile(`msg="((?:[^"\\]|\\.)*)"`)

// logFollower reads the messages a process logged since the last call.
type logFollower struct {
	path   string
	offset int
}

func (f *logFollower) messages() []string {
	raw, err := os.ReadFile(f.path)
	if err != nil || len(raw) <= f.offset {
		return nil
	}
	// Only whole lines; a line being written is read next time.
	end := strings.LastIndexByte(string(raw), '\n') + 1
	if end <= f.offset {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(raw[f.offset:end]), "\n") {
		if m := logMessage.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	f.offset = end
	return out
}
