package data_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// lbConfigData has the fields of the data CAPD v1.14.2 executes a custom
// haproxy template with (its loadbalancer.ConfigData, an internal
// package).
type lbConfigData struct {
	FrontendControlPlanePort string
	BackendControlPlanePort  string
	BackendServers           map[string]lbBackend
	IPv6                     bool
}

type lbBackend struct {
	Address string
	Weight  int
}

// TestIntegrationIPv6LoadBalancerTemplate executes the ipv6 flavor's
// haproxy template as CAPD does (text/template with JoinHostPort), for an
// IPv6 and an IPv4 cluster of two control-plane machines, and has the
// haproxy of the load balancer image the harness builds check each
// result (haproxy -c), in a container of the real engine. As a control,
// CAPD's own IPv6 bind line, which ends with ";", must be refused: that
// is why the flavor brings a template. It needs the image already built
// (make images) and fails, building nothing, when it is missing.
func TestIntegrationIPv6LoadBalancerTemplate(t *testing.T) {
	tmpl := ipv6LBTemplate(t)
	r := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := config.Load("../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	image := cfg.Build.LoadBalancer.Image
	if _, err := r.InspectImage(ctx, image); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("the load balancer image %s is missing: build the harness images first (make images); this test builds nothing", image)
		}
		t.Fatal(err)
	}
	runID := runtime.NewRunID()
	id, err := r.RunContainer(ctx, runtime.ContainerSpec{
		Name: "capd-e2e-lbtemplate-" + runID, Image: image,
		Entrypoint: []string{"sleep", "300"},
		Labels:     runtime.RunLabels(runID, "lbtemplate-integration-test", nil),
	})
	if err != nil {
		t.Fatalf("run the load balancer image: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.RemoveContainer(ctx, id); err != nil {
			t.Errorf("remove the load balancer image's container: %v", err)
		}
	})
	check := func(cfg string) (string, bool) {
		var out bytes.Buffer
		res, err := r.Exec(ctx, id, runtime.ExecOptions{
			Cmd:   []string{"sh", "-c", "cat > /tmp/haproxy.cfg && haproxy -c -f /tmp/haproxy.cfg"},
			Stdin: strings.NewReader(cfg), Stdout: &out, Stderr: &out,
		})
		if err != nil {
			t.Fatalf("haproxy -c: %v", err)
		}
		return out.String(), res.ExitCode == 0
	}

	for _, ipv6 := range []bool{true, false} {
		addrs := []string{"172.18.0.4", "172.18.0.5"}
		if ipv6 {
			addrs = []string{"fc00:f853:ccd:e793::4", "fc00:f853:ccd:e793::5"}
		}
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, lbConfigData{
			FrontendControlPlanePort: "7777", BackendControlPlanePort: "6443", IPv6: ipv6,
			BackendServers: map[string]lbBackend{"c1-control-plane-a": {addrs[0], 100}, "c1-control-plane-b": {addrs[1], 0}},
		}); err != nil {
			t.Fatalf("execute the template (IPv6 %t): %v", ipv6, err)
		}
		got := buf.String()
		for _, want := range []string{
			"bind :::7777 v4v6\n",
			"server c1-control-plane-a " + net.JoinHostPort(addrs[0], "6443") + " weight 100 check",
			"server c1-control-plane-b " + net.JoinHostPort(addrs[1], "6443") + " weight 0 check",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("IPv6 %t: the configuration lacks %q:\n%s", ipv6, want, got)
			}
		}
		if out, ok := check(got); !ok {
			t.Errorf("IPv6 %t: haproxy refuses the configuration:\n%s\n%s", ipv6, out, got)
		}
		if ipv6 {
			capd := strings.Replace(got, "bind :::7777 v4v6\n", "bind *:7777\n  bind :::7777;\n", 1)
			if out, ok := check(capd); ok || !strings.Contains(out, "invalid character ';'") {
				t.Errorf("CAPD's IPv6 bind line: haproxy ok=%t, output:\n%s\nwant it refused for its ';'", ok, out)
			}
		}
	}
}

// ipv6LBTemplate returns the ipv6 flavor's haproxy template (the
// ConfigMap its DevCluster names), parsed as CAPD parses it.
func ipv6LBTemplate(t *testing.T) *template.Template {
	t.Helper()
	raw, err := os.ReadFile("cluster-template-ipv6.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := docs.Read()
		if err != nil {
			t.Fatalf("no ConfigMap *-lb-config in cluster-template-ipv6.yaml: %v", err)
		}
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal(doc, &cm); err != nil || cm.Kind != "ConfigMap" || !strings.HasSuffix(cm.Name, "-lb-config") {
			continue
		}
		tmpl, err := template.New("lb").Funcs(template.FuncMap{"JoinHostPort": net.JoinHostPort}).Parse(cm.Data["value"])
		if err != nil {
			t.Fatalf("parse the haproxy template of %s: %v", cm.Name, err)
		}
		return tmpl
	}
}
