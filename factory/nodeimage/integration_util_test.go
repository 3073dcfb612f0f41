//go:build images

package nodeimage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// imageTest returns the loaded config and a runtime closed at the end of the
// test. These tests need the images of `make images`, so they carry the
// build tag "images" and run in `make test-images`, never in `make test`.
func imageTest(t testing.TB) (*config.Config, runtime.Runtime) {
	t.Helper()
	rt := runtimetest.Engine(t)
	cfg, err := config.Load(filepath.Join("..", "..", "config", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, rt
}

// requireImage fails the test when the engine lacks ref.
func requireImage(t testing.TB, rt runtime.Runtime, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rt.InspectImage(ctx, ref); err != nil {
		t.Fatalf("image %s: %v (run `make images` first)", ref, err)
	}
}

// defaultKubernetes returns cfg's build of KUBERNETES_VERSION.
func defaultKubernetes(t testing.TB, cfg *config.Config) *config.Kubernetes {
	t.Helper()
	version, err := cfg.Variable("KUBERNETES_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	k, err := cfg.Build.KubernetesVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// kindCluster is a cluster createKindCluster made.
type kindCluster struct {
	name string
	cs   kubernetes.Interface
	// created is how long kind's create took.
	created time.Duration
	delete  func()
}

// createKindCluster creates a kind cluster named prefix plus a run id from
// image, with kind as a library, and returns it with a client. Its delete
// removes the cluster and fails t on anything left of it in the engine; a
// failed create is deleted before t fails.
func createKindCluster(t testing.TB, rt runtime.Runtime, prefix, image string, c *v1alpha4.Cluster) kindCluster {
	t.Helper()
	name := prefix + runtime.NewRunID()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	provider := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(testLogger{t}))
	kc := kindCluster{name: name, delete: func() {
		if err := provider.Delete(name, kubeconfig); err != nil {
			t.Errorf("delete cluster %q: %v", name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := leak.Check(ctx, rt, leak.Selector{Cluster: name})
		if err != nil {
			t.Error(err)
			return
		}
		if err := rep.Err(); err != nil {
			t.Error(err)
			return
		}
		t.Log(rep.String())
	}}
	opts := []cluster.CreateOption{
		cluster.CreateWithNodeImage(image),
		cluster.CreateWithKubeconfigPath(kubeconfig),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	}
	if c != nil {
		opts = append(opts, cluster.CreateWithV1Alpha4Config(c))
	}
	start := time.Now()
	err := provider.Create(name, opts...)
	kc.created = time.Since(start)
	if err == nil {
		var restConfig *rest.Config
		if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err == nil {
			kc.cs, err = kubernetes.NewForConfig(restConfig)
		}
	}
	if err != nil {
		kc.delete()
		t.Fatalf("create cluster %q from %s: %v", name, image, err)
	}
	return kc
}
