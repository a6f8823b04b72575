package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// The benchmark's fixed identities. The tokens are fake; none is ever printed.
const (
	namespace        = "harvester-system"
	secretName       = "equinix-addon"
	metalToken       = "bench-metal-token-5b1e"
	projectID        = "b3c4d5e6-0000-4000-8000-00000000be00"
	joinToken        = "bench-join-token-Q7r2"
	vip              = "10.0.0.10"
	harvesterVersion = "v1.4.1"
	clusterID        = "harvester-bench"
)

// env is what every scenario shares: one real apiserver + etcd, clients with
// no client-side throttling of their own (the benchmark must not be its own
// bottleneck), the controller binary and a watch on Instances.
type env struct {
	cluster *cluster.Cluster
	rest    *rest.Config
	kube    kubernetes.Interface
	client  versioned.Interface
	binary  string
	// workDir receives the controller logs and the results.
	workDir string
	log     logrus.FieldLogger

	instances cache.SharedIndexInformer
}

func newEnv(ctx context.Context, binary, workDir string, log logrus.FieldLogger) (*env, error) {
	log.Info("starting etcd and kube-apiserver")
	c, err := cluster.Start(ctx, cluster.Options{Log: func(f string, a ...interface{}) { log.Debugf(f, a...) }})
	if err != nil {
		return nil, fmt.Errorf("starting the test cluster: %w", err)
	}
	e := &env{cluster: c, binary: binary, workDir: workDir, log: log}
	if err := e.setup(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return e, nil
}

func (e *env) setup(ctx context.Context) error {
	e.rest = rest.CopyConfig(e.cluster.RESTConfig)
	e.rest.QPS, e.rest.Burst = 1000, 2000
	var err error
	if e.kube, err = kubernetes.NewForConfig(e.rest); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	if e.client, err = versioned.NewForConfig(e.rest); err != nil {
		return fmt.Errorf("addon client: %w", err)
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	if err := cluster.InstallCRDs(ctx, e.rest, cluster.AddonCRDDir(root), cluster.HarvesterCRDDir(root), cluster.InventoryCRDDir(root)); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if err := e.harvesterObjects(ctx); err != nil {
		return err
	}
	return e.watchInstances(ctx)
}

func (e *env) stop() { e.cluster.Stop() }

// harvesterObjects creates what a Harvester cluster has and the addon reads:
// its namespace, the VIP ConfigMap, the server-version Setting and the
// credentials Secret an operator creates.
func (e *env) harvesterObjects(ctx context.Context) error {
	core := e.kube.CoreV1()
	objs := []struct {
		what   string
		create func() error
	}{
		{"namespace", func() error {
			_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
			return err
		}},
		{"VIP ConfigMap", func() error {
			_, err := core.ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "vip"},
				Data:       map[string]string{"ip": vip, "enabled": "true"},
			}, metav1.CreateOptions{})
			return err
		}},
		{"credentials Secret", func() error {
			_, err := core.Secrets(namespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName,
					Labels: map[string]string{equinixv1.LabelSecret: equinixv1.SecretCredentials}},
				Data: map[string][]byte{
					"METAL_AUTH_TOKEN": []byte(metalToken), "PROJECT_ID": []byte(projectID), "JOIN_TOKEN": []byte(joinToken),
				},
			}, metav1.CreateOptions{})
			return err
		}},
		{"server-version Setting", func() error { return e.createVersionSetting(ctx) }},
	}
	for _, o := range objs {
		if err := o.create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the %s: %w", o.what, err)
		}
	}
	return nil
}

// createVersionSetting goes through the dynamic client: the addon's own
// client for Settings is read-only, as the addon never writes them.
func (e *env) createVersionSetting(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(e.rest)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "harvesterhci.io/v1beta1", "kind": "Setting",
		"metadata": map[string]interface{}{"name": harvester.ServerVersionSettingName},
		"value":    harvesterVersion,
	}}
	_, err = dyn.Resource(schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}).
		Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// watchInstances keeps a local copy of every Instance, so that waiting for
// 2,000 of them costs the apiserver one watch rather than repeated lists.
func (e *env) watchInstances(ctx context.Context) error {
	insts := e.client.EquinixV1().Instances()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return insts.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return insts.Watch(ctx, o)
		},
	}
	e.instances = cache.NewSharedIndexInformer(lw, &equinixv1.Instance{}, 0, cache.Indexers{})
	go e.instances.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), e.instances.HasSynced) {
		return fmt.Errorf("the Instance watch did not sync")
	}
	return nil
}

// apiserverMetrics scrapes the apiserver's own /metrics, which count every
// request by resource and verb, the controller's included.
func (e *env) apiserverMetrics(ctx context.Context) (metrics, error) {
	raw, err := e.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the apiserver's metrics: %w", err)
	}
	return parseMetrics(bytes.NewReader(raw))
}

// instanceList is the watched Instances.
func (e *env) instanceList() []*equinixv1.Instance {
	objs := e.instances.GetStore().List()
	out := make([]*equinixv1.Instance, 0, len(objs))
	for _, o := range objs {
		if i, ok := o.(*equinixv1.Instance); ok {
			out = append(out, i)
		}
	}
	return out
}
