// Command harvester-node-down runs Harvester's own node-down controller
// (github.com/harvester/harvester pkg/controller/master/node, DownRegister)
// against any kube-apiserver, with Harvester's own settings provider
// (pkg/controller/global/settings), so that tests see a dead node handled
// by the very code a Harvester cluster runs: after the period of the
// vm-force-reset-policy Setting it taints the node kubevirt.io/drain, after
// vmMigrationTimeout node.kubernetes.io/out-of-service, and it takes both
// away when the node is Ready again. Nothing else of Harvester runs.
//
// At start the settings provider creates every Setting Harvester knows that
// is missing, as a Harvester server does, and then reads them from its
// cache; a test changes vm-force-reset-policy's value as a person does in
// the UI. The Upgrade CRD should be installed: the handler lists Upgrades
// to stand back during one.
//
// scripts/harvester-node-down builds it; tests/nodedown runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/rancher/lasso/pkg/controller"
	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/rancher/wrangler/v3/pkg/schemes"
	"github.com/rancher/wrangler/v3/pkg/signals"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester/harvester/pkg/config"
	harvestersettings "github.com/harvester/harvester/pkg/controller/global/settings"
	"github.com/harvester/harvester/pkg/controller/master/node"
	harvesterscheme "github.com/harvester/harvester/pkg/generated/clientset/versioned/scheme"
)

const harvesterModule = "github.com/harvester/harvester"

// sourceHash is the SHA-256 of this file, set by the build script: with the
// Harvester version it tells the script whether a cached binary is current.
var sourceHash = "unknown"

func main() {
	// "-kubeconfig" is registered on the global flag set by a dependency;
	// defining it again panics.
	kubeconfig := flag.String("kube", "", "kubeconfig of the kube-apiserver to watch")
	readyFile := flag.String("ready-file", "", "file to write once the caches have synced and the handler runs")
	version := flag.Bool("version", false, "print the Harvester version and source hash, then exit")
	debugLog := flag.Bool("debug", false, "log at debug level (the handler's requeues)")
	flag.Parse()

	if *version {
		fmt.Printf("%s %s source %s\n", harvesterModule, harvesterVersion(), sourceHash)
		return
	}
	if *debugLog {
		logrus.SetLevel(logrus.DebugLevel)
	}
	if err := run(*kubeconfig, *readyFile); err != nil {
		logrus.Fatal(err)
	}
}

func harvesterVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == harvesterModule {
			return dep.Version
		}
	}
	return "unknown"
}

func run(kubeconfig, readyFile string) error {
	ctx := signals.SetupSignalContext()
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}

	// Harvester's scheme is its own types plus every type wrangler knows;
	// the one shared factory below builds caches of any of them.
	scheme := runtime.NewScheme()
	if err := harvesterscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("harvester scheme: %w", err)
	}
	if err := schemes.AddToScheme(scheme); err != nil {
		return fmt.Errorf("wrangler schemes: %w", err)
	}
	factory, err := controller.NewSharedControllerFactoryFromConfig(restConfig, scheme)
	if err != nil {
		return fmt.Errorf("shared controller factory: %w", err)
	}
	opts := &generic.FactoryOptions{SharedControllerFactory: factory}
	ctx, scaled, err := config.SetupScaled(ctx, restConfig, opts)
	if err != nil {
		return fmt.Errorf("harvester's scaled context: %w", err)
	}

	// The order Harvester's server registers them in: the global
	// controllers (the settings provider among them) before the master
	// controllers.
	if err := harvestersettings.Register(ctx, scaled, nil, config.Options{}); err != nil {
		return fmt.Errorf("harvester's settings provider: %w", err)
	}
	if err := node.DownRegister(ctx, scaled.Management, config.Options{}); err != nil {
		return fmt.Errorf("harvester's node-down controller: %w", err)
	}
	if err := scaled.Management.Start(2); err != nil {
		return fmt.Errorf("starting harvester's controllers: %w", err)
	}
	logrus.Infof("Harvester %s node-down controller running", harvesterVersion())
	if readyFile != "" {
		// Written and renamed into place, so a reader never sees half of it.
		tmp := readyFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(harvesterVersion()), 0o600); err != nil {
			return fmt.Errorf("ready file: %w", err)
		}
		if err := os.Rename(tmp, readyFile); err != nil {
			return fmt.Errorf("ready file: %w", err)
		}
	}
	<-ctx.Done()
	return nil
}
