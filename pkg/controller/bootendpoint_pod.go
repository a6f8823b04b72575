package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
)

// The chart's iPXE Service selects the pod that carries LabelBootEndpoint.
// Only the leader has the claims in its caches, so only the leader listens
// on the boot endpoint's port; a standby behind the Service would refuse a
// booting server's connection, and the server would boot its disk. So the
// leader labels its own pod once it listens, and every replica removes the
// label before it reports ready: a leader that lost its lease exits, and
// the label it left on its pod must be gone before the restarted container
// is an endpoint again.

// servingPatch sets the label (serving) or removes it.
func servingPatch(serving bool) ([]byte, error) {
	var value any // null removes the label in a merge patch
	if serving {
		value = v1.BootEndpointServing
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{v1.LabelBootEndpoint: value}}})
}

// markServing labels cfg.PodName as the boot endpoint's, or removes the
// label; without a pod name (a process outside a pod) it does nothing.
func markServing(ctx context.Context, k8s kubernetes.Interface, cfg *config.Config, serving bool) error {
	if cfg.PodName == "" {
		return nil
	}
	patch, err := servingPatch(serving)
	if err != nil {
		return err
	}
	if _, err := k8s.CoreV1().Pods(cfg.Namespace).Patch(ctx, cfg.PodName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling pod %s/%s %s=%t: %w", cfg.Namespace, cfg.PodName, v1.LabelBootEndpoint, serving, err)
	}
	return nil
}

// WithdrawBootEndpoint removes the boot endpoint's label from this pod,
// waiting for the Kubernetes API as long as it takes. The process calls it
// before it reports ready, in the hardware mode with owned pools.
func WithdrawBootEndpoint(ctx context.Context, k8s kubernetes.Interface, cfg *config.Config) error {
	if cfg.Mode != config.ModeHardware || !cfg.OwnedPools || cfg.PodName == "" {
		return nil
	}
	// A missing pod or a missing permission does not pass by waiting: the
	// process stops and says so.
	var final error
	err := untilReachable(ctx, startupBackoff, func(ctx context.Context) error {
		err := markServing(ctx, k8s, cfg, false)
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			final = err
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	if final == nil {
		logrus.Debugf("pod %s/%s does not serve the boot endpoint (yet)", cfg.Namespace, cfg.PodName)
	}
	return final
}
