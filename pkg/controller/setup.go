// Package controller wires every controller of the addon onto one shared lasso
// controller factory and starts them.
package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/rancher/lasso/pkg/cache"
	"github.com/rancher/lasso/pkg/client"
	lassocontroller "github.com/rancher/lasso/pkg/controller"
	"github.com/rancher/wrangler/v3/pkg/generated/controllers/core"
	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/rancher/wrangler/v3/pkg/start"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned/scheme"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io"
	harvester "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/harvesterhci.io"
)

// Factories is every wrangler factory, all sharing one lasso controller factory
// so that one rate limiter and one set of caches serve every controller.
type Factories struct {
	Equinix   *equinix.Factory
	Harvester *harvester.Factory
	Core      *core.Factory
}

// NewFactories builds the factories on one shared controller factory with an
// explicit per-item exponential backoff (5 ms up to 5 minutes): a failing Metal
// call is retried quickly at first and then no more often than every 5 minutes.
func NewFactories(restConfig *rest.Config) (*Factories, error) {
	rateLimiter := workqueue.NewTypedItemExponentialFailureRateLimiter[any](5*time.Millisecond, 5*time.Minute)
	shared, err := newSharedControllerFactory(restConfig, scheme.Scheme, rateLimiter)
	if err != nil {
		return nil, err
	}
	opts := &generic.FactoryOptions{SharedControllerFactory: shared}
	eq, err := equinix.NewFactoryFromConfigWithOptions(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("equinix factory: %w", err)
	}
	hv, err := harvester.NewFactoryFromConfigWithOptions(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("harvester factory: %w", err)
	}
	co, err := core.NewFactoryFromConfigWithOptions(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("core factory: %w", err)
	}
	return &Factories{Equinix: eq, Harvester: hv, Core: co}, nil
}

func newSharedControllerFactory(restConfig *rest.Config, s *runtime.Scheme, rl workqueue.TypedRateLimiter[any]) (lassocontroller.SharedControllerFactory, error) {
	cf, err := client.NewSharedClientFactory(restConfig, &client.SharedClientFactoryOptions{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("client factory: %w", err)
	}
	cacheFactory := cache.NewSharedCachedFactory(cf, &cache.SharedCacheFactoryOptions{})
	return lassocontroller.NewSharedControllerFactory(cacheFactory, &lassocontroller.SharedControllerFactoryOptions{
		DefaultRateLimiter: rl,
	}), nil
}

// Start registers every controller and starts the factories.
func Start(ctx context.Context, restConfig *rest.Config, cfg *config.Config) error {
	f, err := NewFactories(restConfig)
	if err != nil {
		return err
	}
	for _, register := range registerFuncs {
		if err := register(ctx, f, cfg); err != nil {
			return err
		}
	}
	return start.All(ctx, cfg.Threads, f.Equinix, f.Harvester, f.Core)
}

// RegisterFunc wires one controller.
type RegisterFunc func(ctx context.Context, f *Factories, cfg *config.Config) error

var registerFuncs = []RegisterFunc{}
