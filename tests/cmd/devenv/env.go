package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/harvestercluster"
)

// Names in the environment, as a Harvester cluster with the addon has them.
const (
	namespace        = "harvester-system"
	secretName       = "equinix-addon"
	harvesterVersion = "v1.4.1"
)

// env is a running local environment.
type env struct {
	settings
	// detached: the processes outlive this command (make dev-up).
	detached bool
	root     string
	kubeBin  string
	// kubeconfig is the cluster's admin kubeconfig, in the state folder.
	kubeconfig string
	rest       *rest.Config
	kube       kubernetes.Interface
	client     versioned.Interface
	simulator  *process
	simURL     string
	metricsURL string
}

// up starts the environment: the cluster binaries (built once), the
// cluster, what Harvester holds, the simulator and the controller.
// Whatever fails midway, what started is recorded for `down`.
func up(ctx context.Context, s settings, detached bool) (*env, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	if running(s.dir) {
		return nil, fmt.Errorf("already running (state in %s); run: make dev-down", s.dir)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	e := &env{settings: s, detached: detached, root: root}
	for _, step := range []func(context.Context) error{e.clusterBinaries, e.startCluster, e.harvesterCluster, e.startSimulator, e.startController} {
		if err := step(ctx); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (e *env) clusterBinaries(context.Context) error {
	say("cluster binaries: kube-apiserver, kube-controller-manager, kubectl, etcd (built once from the Go module proxy into %s, then reused)", cluster.ToolsCache())
	var out []byte
	err := timed("cluster binaries", func() error {
		cmd := exec.Command(filepath.Join(e.root, "scripts", "cluster-binaries"))
		cmd.Dir, cmd.Stderr = e.root, os.Stderr
		var err error
		out, err = cmd.Output()
		return err
	})
	if err != nil {
		return err
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return errors.New("scripts/cluster-binaries named no folder")
	}
	e.kubeBin = lines[len(lines)-1]
	return nil
}

func (e *env) startCluster(ctx context.Context) error {
	say("starting etcd, kube-apiserver and kube-controller-manager")
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(startCtx, cluster.Options{
		BinDir: e.kubeBin, Dir: filepath.Join(e.dir, "cluster"), Detach: e.detached, ControllerManager: true,
		Log: func(f string, a ...interface{}) { fmt.Fprintf(os.Stderr, "    "+f+"\n", a...) },
	})
	if err != nil {
		return err
	}
	if err := recordPIDs(e.dir, clusterPIDs, c.PIDs()...); err != nil {
		return err
	}
	raw, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	e.kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.kubeconfig, raw, 0o600); err != nil {
		return err
	}
	e.rest = c.RESTConfig
	if e.kube, err = kubernetes.NewForConfig(e.rest); err != nil {
		return err
	}
	e.client, err = versioned.NewForConfig(e.rest)
	return err
}

// harvesterCluster installs the CRDs from the chart and writes what a
// Harvester cluster holds, as the integration tests' clusters have it.
func (e *env) harvesterCluster(ctx context.Context) error {
	say("installing the CRDs (from the chart) and what a Harvester cluster has")
	dirs := []string{cluster.AddonCRDDir(e.root), cluster.InventoryCRDDir(e.root), cluster.HarvesterCRDDir(e.root)}
	if err := cluster.InstallCRDs(ctx, e.rest, dirs...); err != nil {
		return err
	}
	for _, d := range dirs {
		rel, _ := filepath.Rel(e.root, d)
		fmt.Fprintf(os.Stderr, "    CRDs of %s\n", rel)
	}
	err := harvestercluster.Write(ctx, e.rest, harvestercluster.Cluster{
		Namespace: namespace, VIP: e.vip, ServerVersion: harvesterVersion, SecretName: secretName,
		Credentials: map[string][]byte{
			"METAL_AUTH_TOKEN": []byte(e.metalToken), "PROJECT_ID": []byte(e.projectID), "JOIN_TOKEN": []byte(e.joinToken),
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "    namespace %s, ConfigMap vip (%s), Setting server-version (%s), Secret %s/%s (the Metal token, project and join token)\n",
		namespace, e.vip, harvesterVersion, namespace, secretName)
	// Harvester's Service for the VIP, on which kube-vip names the node
	// holding it (kube-vip.io/vipHost); here a person plays kube-vip with
	// kubectl annotate.
	svc := harvestercluster.IngressExpose(e.vip)
	if _, err := e.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	fmt.Fprintf(os.Stderr, "    Service %s/%s of type LoadBalancer for the VIP\n", svc.Namespace, svc.Name)
	return nil
}

func (e *env) startSimulator(ctx context.Context) error {
	say("starting the Equinix Metal simulator and its node-join agent")
	p, err := start(e.dir, e.detached, "simulator", filepath.Join(e.binDir, "harvester-equinix-addon-simulator"),
		"--listen", "127.0.0.1:0", "--token", e.metalToken, "--project-id", e.projectID,
		"--kubeconfig", e.kubeconfig, "--cluster-url", "https://"+e.vip, "--join-token", e.joinToken,
		"--timing-scale", strconv.FormatFloat(e.timingScale, 'g', -1, 64), "--install-time", e.installTime.String(),
		"--elastic-ip", e.vip+"/32@"+e.vipMetro)
	if err != nil {
		return err
	}
	e.simulator = p
	if e.simURL, err = p.firstLine(ctx, 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "    the Metal API at %s\n", e.simURL)
	return os.WriteFile(filepath.Join(e.dir, "simulator-url"), []byte(e.simURL+"\n"), 0o600)
}

func (e *env) startController(ctx context.Context) error {
	say("starting the controller")
	addrs := make([]string, 2)
	for i := range addrs {
		var err error
		if addrs[i], err = cluster.FreeAddr(); err != nil {
			return err
		}
	}
	httpAddr, ipxeAddr := addrs[0], addrs[1]
	p, err := start(e.dir, e.detached, "controller", e.controllerBinary(),
		"--kubeconfig", e.kubeconfig, "--metal-api-url", e.simURL,
		"--http-address", httpAddr, "--ipxe-address", ipxeAddr, "--ipxe-public-url", "http://"+ipxeAddr,
		"--poll-interval", "1s", "--orphan-sweep-interval", "30s", "--replacement-backoff", "2s")
	if err != nil {
		return err
	}
	if err := p.waitReady(ctx, "http://"+httpAddr+"/readyz"); err != nil {
		return err
	}
	e.metricsURL = "http://" + httpAddr + "/metrics"
	return os.WriteFile(filepath.Join(e.dir, "metrics-url"), []byte(e.metricsURL+"\n"), 0o600)
}

func (e *env) controllerBinary() string {
	return filepath.Join(e.binDir, "harvester-equinix-addon")
}

// resolve makes the settings' folders absolute, from the repository's
// root.
func (s *settings) resolve() error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	for _, dir := range []*string{&s.dir, &s.binDir} {
		if !filepath.IsAbs(*dir) {
			*dir = filepath.Join(root, *dir)
		}
	}
	return nil
}

// printUsage tells how to use the running environment (make dev-up).
func (e *env) printUsage() {
	fmt.Printf(`
The local environment is running. In your shell:

  export KUBECONFIG=%s
  export PATH=%s:$PATH        # kubectl %s

Equinix Metal simulator: %s   (X-Auth-Token: %s)
The VIP %s is an Elastic IP of the project (metro %s); once a pool's nodes are Ready, play kube-vip:
  kubectl annotate service -n kube-system ingress-expose kube-vip.io/vipHost=<node> --overwrite
  kubectl get elasticip -w
Controller metrics:      %s
Logs:                    %s, %s
Stop everything:         make dev-down
`, e.kubeconfig, e.kubeBin, cluster.KubeVersion, e.simURL, e.metalToken, e.vip, e.vipMetro, e.metricsURL,
		filepath.Join(e.dir, "controller.log"), filepath.Join(e.dir, "simulator.log"))
}

// kubectl runs the cluster's kubectl as a user of the environment would,
// its output to the terminal or to out.
func (e *env) kubectl(ctx context.Context, out *strings.Builder, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(e.kubeBin, "kubectl"), append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	cmd.Stderr = os.Stderr
	cmd.Stdout = os.Stdout
	if out != nil {
		cmd.Stdout = out
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// kubectlOutput is kubectl's output, its complaints in the error only: for
// reads a step polls, where "not found yet" is no news.
func (e *env) kubectlOutput(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, filepath.Join(e.kubeBin, "kubectl"), append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
