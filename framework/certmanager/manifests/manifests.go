// Package manifests renders and installs what a cluster needs to run
// Cluster API's providers without cert-manager's images: cert-manager's
// CRDs, taken at render time from deploy/crds of the cert-manager module
// that config/e2e.yaml names (build.certManager), and the substitute
// controller of package certmanager (Namespace cert-manager, RBAC,
// Deployment of build.certManager.substituteImage).
//
// The suite calls Install on the management cluster before clusterctl init
// (with cert-manager marked externally provisioned; see package
// framework/bootstrap), or writes Manifests somewhere for kubectl.
//
// The CRDs are read from the Go module cache, downloaded with `go mod
// download` when missing; they are never copied into this repository. This
// package must not build images (see package certmanager/image).
package manifests

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/waitfor"
)

// Namespace is where the substitute runs, cert-manager's usual namespace.
const Namespace = "cert-manager"

// DeploymentName is the name of the substitute's Deployment.
const DeploymentName = "cert-manager-substitute"

// FieldOwner is the server-side apply field manager of Install.
const FieldOwner = "capd-e2e"

//go:embed substitute.yaml
var substituteTemplate string

var tmpl = template.Must(template.New("substitute.yaml").Option("missingkey=error").Parse(substituteTemplate))

// Options change how the substitute runs.
type Options struct {
	// HostNetwork runs it on a control-plane node's network, talking to
	// that node's API server (port 6443, kubeadm's): it then needs neither
	// the CNI nor kube-proxy, so it starts while they do. For a cluster
	// whose control-plane nodes are kubeadm's and schedulable, such as the
	// kind management cluster the harness creates.
	HostNetwork bool
}

// Substitute renders the substitute's Namespace, RBAC and Deployment for
// image (e.g. "capd-e2e/cert-manager-substitute:v1.21.2"). It needs neither
// the network nor the module cache.
func Substitute(image string, o Options) ([]byte, error) {
	if image == "" {
		return nil, errors.New("render cert-manager substitute: no image given")
	}
	var b bytes.Buffer
	data := struct {
		Image, Namespace string
		HostNetwork      bool
	}{image, Namespace, o.HostNetwork}
	if err := tmpl.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render cert-manager substitute: %w", err)
	}
	return b.Bytes(), nil
}

// CRDs returns cert-manager's CustomResourceDefinitions from deploy/crds of
// module (e.g. github.com/cert-manager/cert-manager@v1.21.2), as one YAML
// stream in file name order. The module is downloaded with the go command
// when it is not in the module cache.
func CRDs(ctx context.Context, module config.Module) ([]byte, error) {
	dir, err := moduleDir(ctx, module)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "deploy", "crds", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("read cert-manager CRDs: no deploy/crds/*.yaml in %s", module)
	}
	slices.Sort(files)
	var b bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read cert-manager CRDs: %w", err)
		}
		data = bytes.TrimPrefix(bytes.TrimSpace(data), []byte("---\n"))
		b.WriteString("---\n")
		b.Write(data)
		b.WriteString("\n")
	}
	return b.Bytes(), nil
}

// moduleDir returns the module's directory in the module cache. The go
// command runs in an empty directory, outside this repository's module, so
// go.mod and go.sum stay untouched.
func moduleDir(ctx context.Context, module config.Module) (string, error) {
	if module.Path == "" || module.Version == "" {
		return "", fmt.Errorf("download module %q: path and version are required", module)
	}
	tmp, err := os.MkdirTemp("", "capd-e2e-modload-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module.String())
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil && runErr == nil {
		return "", fmt.Errorf("download module %q: read go output: %w", module, err)
	}
	switch {
	case info.Error != "":
		return "", fmt.Errorf("download module %q: %s", module, info.Error)
	case runErr != nil:
		return "", fmt.Errorf("download module %q: %w: %s", module, runErr, strings.TrimSpace(stderr.String()))
	case info.Dir == "":
		return "", fmt.Errorf("download module %q: go reported no directory", module)
	}
	return info.Dir, nil
}

// Manifests returns everything to install, as one YAML stream: cert-manager's
// CRDs from cfg.Build.CertManager's module, then the substitute for
// cfg.Build.CertManager.SubstituteImage, run as o says. The module path
// defaults to github.com/cert-manager/cert-manager (config.Load sets it).
func Manifests(ctx context.Context, cfg *config.Config, o Options) ([]byte, error) {
	crds, err := CRDs(ctx, cfg.Build.CertManager.Module)
	if err != nil {
		return nil, err
	}
	sub, err := Substitute(cfg.Build.CertManager.SubstituteImage, o)
	if err != nil {
		return nil, err
	}
	return append(crds, append([]byte("---\n"), sub...)...), nil
}

// Objects decodes a YAML stream (such as Manifests') into objects, skipping
// empty documents.
func Objects(yamlStream []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(yamlStream), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decode document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d: no kind or name", i)
		}
		out = append(out, u)
	}
}

// Wait says what Install waits for once everything is applied.
type Wait int

const (
	// WaitNone returns once everything is applied.
	WaitNone Wait = iota
	// WaitCRDs waits until the CRDs are Established: enough to create
	// Certificates and Issuers (what clusterctl init applies), not to
	// have them issued.
	WaitCRDs
	// WaitAll waits for the CRDs and then for the substitute's Deployment
	// to be Available (see WaitAvailable).
	WaitAll
)

// InstallInput is the input of Install.
type InstallInput struct {
	// Client is a client of the cluster to install into, with cluster-admin
	// rights; waits learn of changes from its watches. Required.
	Client client.WithWatch
	// Config gives the cert-manager module and the substitute's image.
	// Required.
	Config *config.Config
	// Wait says what to wait for after applying; if zero, nothing.
	Wait Wait
	// Timeout bounds the wait; required with Wait (take it from the
	// config's wait-controllers interval).
	Timeout time.Duration
	// Resync re-checks without a watch event this often, in case a watch
	// stalls; if zero, Timeout/10.
	Resync time.Duration
	// Options say how the substitute runs.
	Options Options
}

// Install applies Manifests with server-side apply (field manager
// FieldOwner, forcing ownership), CRDs first, and optionally waits until
// they are usable (see InstallInput.Wait). It is idempotent.
func Install(ctx context.Context, in InstallInput) error {
	if in.Client == nil || in.Config == nil {
		return errors.New("install cert-manager substitute: Client and Config are required")
	}
	if in.Wait != WaitNone && in.Timeout <= 0 {
		return errors.New("install cert-manager substitute: InstallInput.Timeout is required with Wait")
	}
	data, err := Manifests(ctx, in.Config, in.Options)
	if err != nil {
		return fmt.Errorf("install cert-manager substitute: %w", err)
	}
	objs, err := Objects(data)
	if err != nil {
		return fmt.Errorf("install cert-manager substitute: %w", err)
	}
	for _, o := range objs {
		if err := in.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("install cert-manager substitute: apply %s %q: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	if in.Wait == WaitNone {
		return nil
	}
	var crds []string
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	t0 := time.Now()
	err = waitfor.Wait{
		Client: in.Client, Watched: listOf("apiextensions.k8s.io/v1", "CustomResourceDefinitionList"),
		Timeout: in.Timeout, Resync: in.Resync, What: "cert-manager's CRDs Established",
	}.Until(ctx, func(ctx context.Context) (bool, string) {
		var pending []string
		for _, name := range crds {
			if p := notReady(ctx, in.Client, "apiextensions.k8s.io/v1", "CustomResourceDefinition", types.NamespacedName{Name: name}, "Established"); p != "" {
				pending = append(pending, p)
			}
		}
		return len(pending) == 0, strings.Join(pending, ", ")
	})
	if err != nil || in.Wait == WaitCRDs {
		return err
	}
	return WaitAvailable(ctx, in.Client, in.Timeout-time.Since(t0), in.Resync)
}

// WaitAvailable waits until the substitute's Deployment is Available,
// learning of changes from a watch, for at most timeout; the error says
// what was last seen.
func WaitAvailable(ctx context.Context, c client.WithWatch, timeout, resync time.Duration) error {
	if timeout <= 0 {
		return fmt.Errorf("wait for the cert-manager substitute: no time left (timeout %s)", timeout)
	}
	key := types.NamespacedName{Namespace: Namespace, Name: DeploymentName}
	return waitfor.Wait{
		Client: c, Watched: listOf("apps/v1", "DeploymentList"), ListOptions: []client.ListOption{client.InNamespace(Namespace)},
		Timeout: timeout, Resync: resync, What: "the cert-manager substitute's Deployment Available",
	}.Until(ctx, func(ctx context.Context) (bool, string) {
		p := notReady(ctx, c, "apps/v1", "Deployment", key, "Available")
		return p == "", p
	})
}

// listOf returns an empty unstructured list to watch, so that the waits
// need nothing in the client's scheme.
func listOf(apiVersion, kind string) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(apiVersion)
	l.SetKind(kind)
	return l
}

// notReady returns "" when the object has condition condType True, else
// what is missing.
func notReady(ctx context.Context, c client.Client, apiVersion, kind string, key types.NamespacedName, condType string) string {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := c.Get(ctx, key, u); err != nil {
		return fmt.Sprintf("%s %s (%v)", kind, key.Name, err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); ok && m["type"] == condType && m["status"] == "True" {
			return ""
		}
	}
	return fmt.Sprintf("%s %s (not %s)", kind, key.Name, condType)
}
