//go:build images

package nodeimage_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"golang.org/x/mod/module"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/nodeimage"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// TestIntegrationHAProxyLikeCAPD runs the load balancer image as CAPD v1.14.2
// does: privileged, with its entrypoint, then writes CAPD's own rendered
// configuration through exec (cp /dev/stdin), reads it back (cp to
// /dev/stdout) and reloads haproxy with SIGHUP. haproxy must serve 6443 and
// 8404 before and after, within the container's open-file limit.
func TestIntegrationHAProxyLikeCAPD(t *testing.T) {
	cfg, rt := imageTest(t)
	image := cfg.Build.LoadBalancer.Image
	requireImage(t, rt, image)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	capdConfig := renderCAPDConfig(t, ctx, cfg.Build.ClusterAPI.Version)

	runID := runtime.NewRunID()
	name := "capd-e2e-haproxy-" + runID
	id, err := rt.RunContainer(ctx, runtime.ContainerSpec{
		Name: name, Image: image, Privileged: true,
		Labels:  runtime.RunLabels(runID, "nodeimage-test", nil),
		Tmpfs:   map[string]string{"/tmp": "", "/run": ""},
		Volumes: []string{"/var"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.RemoveContainer(ctx, id); err != nil {
			t.Error(err)
		}
		rep, err := leak.Check(ctx, rt, leak.Selector{RunID: runID})
		if err != nil {
			t.Error(err)
		} else if err := rep.Err(); err != nil {
			t.Error(err)
		}
	})
	logs := func() string {
		var out bytes.Buffer
		_ = rt.Logs(ctx, id, &out, &out)
		return out.String()
	}
	waitListening(t, ctx, rt, id, logs)

	path := nodeimage.HAProxyConfigPath
	res, err := rt.Exec(ctx, id, runtime.ExecOptions{Cmd: []string{"cp", "/dev/stdin", path}, Stdin: strings.NewReader(capdConfig)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("write config: exit %d, %v", res.ExitCode, err)
	}
	back, err := runtime.Output(ctx, rt, id, "cp", path, "/dev/stdout")
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != capdConfig {
		t.Fatalf("config read back differs from the one written:\n%s", back)
	}
	if err := rt.Kill(ctx, id, "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Count(logs(), "Loading success") >= 2, nil
	}); err != nil {
		t.Fatalf("haproxy did not reload: %v\n%s", err, logs())
	}
	waitListening(t, ctx, rt, id, logs)
	d, err := rt.InspectContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !d.State.Running {
		t.Fatalf("haproxy stopped after the reload:\n%s", logs())
	}
	t.Logf("haproxy output:\n%s", logs())
}

// waitListening waits until haproxy listens on 6443 and 8404.
func waitListening(t *testing.T, ctx context.Context, rt runtime.Runtime, id string, logs func() string) {
	t.Helper()
	listening := func() bool {
		out, err := runtime.Output(ctx, rt, id, "cat", "/proc/net/tcp", "/proc/net/tcp6")
		if err != nil {
			return false
		}
		return listens(string(out), 6443) && listens(string(out), 8404)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return listening(), nil }); err != nil {
		t.Fatalf("haproxy does not listen on 6443 and 8404: %v\n%s", err, logs())
	}
}

// listens reports whether /proc/net/tcp content has a socket listening on
// port (state 0A).
func listens(procNetTCP string, port int) bool {
	suffix := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(procNetTCP, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], suffix) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// renderCAPDConfig renders the configuration template of CAPD's load
// balancer (DefaultTemplate in the module's
// infrastructure/docker/internal/loadbalancer/config.go, read from the
// module cache) for one control plane machine, as CAPD does.
func renderCAPDConfig(t *testing.T, ctx context.Context, capiVersion string) string {
	t.Helper()
	gb := &gobuild.Builder{CacheDir: t.TempDir()}
	info, err := gb.Download(ctx, module.Version{Path: "sigs.k8s.io/cluster-api/test", Version: capiVersion})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(info.Dir, "infrastructure", "docker", "internal", "loadbalancer", "config.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var text string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if ok && len(vs.Names) == 1 && vs.Names[0].Name == "DefaultTemplate" && len(vs.Values) == 1 {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				text, _ = strconv.Unquote(lit.Value)
			}
		}
		return text == ""
	})
	if text == "" {
		t.Fatalf("no DefaultTemplate in %s", file)
	}
	tmpl, err := template.New("capd").Funcs(template.FuncMap{"JoinHostPort": net.JoinHostPort}).Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	type backend struct {
		Address string
		Weight  int
	}
	var out bytes.Buffer
	err = tmpl.Execute(&out, struct {
		FrontendControlPlanePort, BackendControlPlanePort string
		BackendServers                                    map[string]backend
		IPv6                                              bool
	}{"6443", "6443", map[string]backend{"test-control-plane-0": {"127.0.0.1", 100}}, false})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "maxconn 100000") {
		t.Logf("note: CAPD's template no longer sets maxconn 100000")
	}
	return out.String()
}
