package docker_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/capd-e2e/capd-e2e/cloudprovider/docker"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// BenchmarkIntegrationLoadBalancerNodeUp measures how long a node whose
// node port begins to serve waits for a Service's load balancer to send it
// traffic. Two load balancers, made by EnsureLoadBalancer for two Services
// and run from the harness's haproxy image, stand in front of one node:
// "rendered" keeps the configuration EnsureLoadBalancer wrote; "defaults"
// has its default-server line removed (and haproxy reloaded), so haproxy
// checks at its default timing, as the provider's configuration did before
// that line. One op is one round: the node, up behind both, stops serving;
// both load balancers log it DOWN; the node serves again, and each side's
// time to the first answer through its address, polled every 50 ms from the
// host, is recorded. Reported: each side's median and maximum in seconds
// (rendered-s/up, defaults-s/up, ...); -benchtime 10x for ten rounds.
//
// It needs a local, rootful engine (the load balancers' addresses are
// reached from the host) and the haproxy image (make images).
func BenchmarkIntegrationLoadBalancerNodeUp(b *testing.B) {
	env := newITEnv(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if _, err := env.rt.InspectImage(ctx, docker.DefaultLoadBalancerImage); err != nil {
		b.Fatalf("the load balancer image %s: %v (build it first: make images)", docker.DefaultLoadBalancerImage, err)
	}
	if info, err := env.rt.Info(ctx); err != nil || info.Rootless || !strings.HasPrefix(info.Endpoint, "unix://") {
		b.Fatalf("this benchmark reaches the load balancers from the host: it needs a local, rootful engine, not %+v (%v)", info, err)
	}
	const nodePort = 30080
	node := env.machine(b, env.cluster+"-md-a", env.cluster, "worker", nil, func(s *runtime.ContainerSpec) {
		s.Entrypoint = []string{"/bin/sh", "-c", "mkdir -p /www && echo node-a > /www/index.html && while :; do sleep 3600; done"}
	})
	d, err := env.rt.InspectContainer(ctx, node)
	if err != nil {
		b.Fatal(err)
	}
	k8sNode := readyNode(node, d.Networks[env.network].IPv4)
	serve := func(on bool) {
		// The server outlives the exec that starts it.
		cmd := []string{"sh", "-c", fmt.Sprintf("busybox httpd -f -p %d -h /www >/dev/null 2>&1 & echo $! >/tmp/httpd.pid", nodePort)}
		if !on {
			cmd = []string{"sh", "-c", "kill $(cat /tmp/httpd.pid)"}
		}
		if out, err := runtime.Output(ctx, env.rt, node, cmd...); err != nil {
			b.Fatalf("%v: %v: %s", cmd, err, out)
		}
	}

	lb, _ := env.cloud(b).LoadBalancer()
	type side struct {
		name, container, url string
		took                 []time.Duration
	}
	// The container name holds a UID's first 16 letters and digits.
	newSide := func(name, uidPrefix string) *side {
		svc := service(tcp(80, nodePort))
		svc.Name = "web-" + name
		svc.UID = types.UID(uidPrefix + "-0000-4000-8000-" + env.runID)
		st := ensureLoadBalancer(ctx, b, lb, env.cluster, svc, []*v1.Node{k8sNode})
		if len(st.Ingress) != 1 {
			b.Fatalf("EnsureLoadBalancer for %s: status %+v", name, st)
		}
		return &side{name: name, container: docker.LoadBalancerContainerName(env.cluster, svc.UID), url: "http://" + st.Ingress[0].IP + ":80/"}
	}
	rendered, defaults := newSide("rendered", "00000001"), newSide("defaults", "00000002")
	sides := []*side{rendered, defaults}

	// logged counts the lines of s's haproxy log that hold text.
	logged := func(s *side, text string) int {
		var logs strings.Builder
		if err := env.rt.Logs(ctx, s.container, &logs, &logs); err != nil {
			b.Fatal(err)
		}
		return strings.Count(logs.String(), text)
	}
	const loaded = "Loading success." // haproxy's master, at each reload
	reloads := logged(defaults, loaded)
	if out, err := runtime.Output(ctx, env.rt, defaults.container, "sh", "-c",
		"grep -q '^  default-server ' "+docker.HAProxyConfigPath+" && sed -i '/^  default-server /d' "+docker.HAProxyConfigPath+" && kill -HUP 1"); err != nil {
		b.Fatalf("removing default-server from %s's configuration: %v: %s", defaults.container, err, out)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return logged(defaults, loaded) > reloads, nil
	}); err != nil {
		b.Fatalf("%s did not reload its configuration without default-server: %v", defaults.container, err)
	}
	downs := func(s *side) int { return logged(s, "/"+node+" is DOWN") }
	// A new connection every time: an answer must come through the node now.
	hc := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	// untilAnswers polls s's address every 50 ms until it answers 200.
	untilAnswers := func(s *side) error {
		return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			resp, err := hc.Get(s.url)
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	}

	// Every round starts with the node up behind both load balancers.
	serve(true)
	for _, s := range sides {
		if err := untilAnswers(s); err != nil {
			b.Fatalf("%s never answered: %v", s.name, err)
		}
	}

	b.ResetTimer()
	for i := range b.N {
		before := make([]int, len(sides))
		for j, s := range sides {
			before[j] = downs(s)
		}
		serve(false)
		for j, s := range sides {
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return downs(s) > before[j], nil
			})
			if err != nil {
				b.Fatalf("round %d: %s never logged the node DOWN: %v", i+1, s.container, err)
			}
		}
		start := time.Now()
		serve(true)
		var wg sync.WaitGroup
		for _, s := range sides {
			wg.Go(func() {
				if err := untilAnswers(s); err != nil {
					b.Errorf("round %d: %s: no answer: %v", i+1, s.name, err)
				}
				s.took = append(s.took, time.Since(start))
			})
		}
		wg.Wait()
		b.Logf("round %d: rendered %.2fs, defaults %.2fs", i+1, rendered.took[i].Seconds(), defaults.took[i].Seconds())
	}
	b.StopTimer()
	for _, s := range sides {
		sorted := slices.Sorted(slices.Values(s.took))
		b.ReportMetric(sorted[len(sorted)/2].Seconds(), s.name+"-s/up")
		b.ReportMetric(sorted[len(sorted)-1].Seconds(), s.name+"-max-s/up")
	}
}
