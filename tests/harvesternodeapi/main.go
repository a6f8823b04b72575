// Command harvester-node-api serves Harvester's own node actions
// (github.com/harvester/harvester pkg/api/node: powerActionPossible,
// powerAction, maintenance mode) against any kube-apiserver, so that tests
// drive the addon through the very code a Harvester cluster runs instead of a
// copy of its calls. It wires steve and the node schema the way Harvester's
// server does, without Harvester's controllers, webhook and UI, and serves
// plain HTTP on loopback with every caller an administrator.
//
//	POST /v1/nodes/<node>?action=powerActionPossible
//	POST /v1/nodes/<node>?action=powerAction   {"operation":"reboot"}
//	GET  /v1/nodes/<node>                      (its actions are the UI's buttons)
//
// scripts/harvester-node-api builds it; tests/harvesterapi runs it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/rancher/lasso/pkg/controller"
	steveauth "github.com/rancher/steve/pkg/auth"
	steveserver "github.com/rancher/steve/pkg/server"
	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/rancher/wrangler/v3/pkg/schemes"
	"github.com/rancher/wrangler/v3/pkg/signals"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester/harvester/pkg/api/node"
	"github.com/harvester/harvester/pkg/config"
	harvesterscheme "github.com/harvester/harvester/pkg/generated/clientset/versioned/scheme"
)

const harvesterModule = "github.com/harvester/harvester"

// sourceHash is the SHA-256 of this file, set by the build script: with the
// Harvester version it tells the script whether a cached binary is current.
var sourceHash = "unknown"

func main() {
	// "-kubeconfig" is registered on the global flag set by a dependency;
	// defining it again panics.
	kubeconfig := flag.String("kube", "", "kubeconfig of the kube-apiserver to serve")
	listen := flag.String("listen", "127.0.0.1:0", "plain-HTTP address to serve on")
	addrFile := flag.String("addr-file", "", "file to write the bound address to once the caches have synced")
	version := flag.Bool("version", false, "print the Harvester version and source hash, then exit")
	flag.Parse()

	if *version {
		fmt.Printf("%s %s source %s\n", harvesterModule, harvesterVersion(), sourceHash)
		return
	}
	if err := run(*kubeconfig, *listen, *addrFile); err != nil {
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

func run(kubeconfig, listen, addrFile string) error {
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
	controllers, err := steveserver.NewController(restConfig, opts)
	if err != nil {
		return fmt.Errorf("steve's controllers: %w", err)
	}
	steve, err := steveserver.New(ctx, restConfig, &steveserver.Options{
		Controllers:    controllers,
		AuthMiddleware: steveauth.ExistingContext,
	})
	if err != nil {
		return fmt.Errorf("steve: %w", err)
	}
	if err := node.RegisterSchema(scaled, steve, config.Options{}); err != nil {
		return fmt.Errorf("harvester's node schema: %w", err)
	}

	// Starting the shared factory starts every cache registered so far
	// (steve's and the node handler's) and waits until they have synced; it
	// never returns while a CRD those caches need is missing.
	start := time.Now()
	if err := controllers.Start(ctx); err != nil {
		return fmt.Errorf("starting steve's controllers: %w", err)
	}
	if err := scaled.Management.Start(1); err != nil {
		return fmt.Errorf("starting harvester's caches: %w", err)
	}
	logrus.Infof("caches synced in %s", time.Since(start).Round(time.Millisecond))

	handler := steveauth.ToMiddleware(steveauth.AuthenticatorFunc(steveauth.AlwaysAdmin))(steve)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logrus.Infof("serving Harvester %s node actions on http://%s", harvesterVersion(), ln.Addr())
	if addrFile != "" {
		// Written last and renamed into place, so a reader never sees half an address.
		tmp := addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(ln.Addr().String()), 0o600); err != nil {
			return fmt.Errorf("address file: %w", err)
		}
		if err := os.Rename(tmp, addrFile); err != nil {
			return fmt.Errorf("address file: %w", err)
		}
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
