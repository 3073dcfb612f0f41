package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// A stand-in for kube-router: like kube-router, it finds the template at
// KUBE_ROUTER_CNI_CONF_FILE and rewrites it (truncate, then write) with
// the node's range; first it waits long enough for the publisher to see
// the template without a range several times, and records whether the
// runtime's configuration showed up meanwhile.
const fakeKubeRouter = `
[ -f "$KUBE_ROUTER_CNI_CONF_FILE" ] || echo "no template at $KUBE_ROUTER_CNI_CONF_FILE" >>/tmp/faults
sleep 2
[ -e ` + KubeRouterCNIConfig + ` ] && echo "published before kube-router wrote the range" >>/tmp/faults
printf '%s' "$RANGED" >"$KUBE_ROUTER_CNI_CONF_FILE"
echo "fake kube-router: range written"
trap 'exit 0' TERM INT
while :; do sleep 1 & wait $!; done
`

const (
	unranged = `{"cniVersion":"0.3.0","name":"mynet","plugins":[{"type":"bridge","ipam":{"type":"host-local"}}]}` + "\n"
	ranged   = `{"cniVersion":"0.3.0","name":"mynet","plugins":[{"type":"bridge","ipam":{"ranges":[[{"subnet":"10.244.0.0/24"}]],"type":"host-local"}}]}`
)

// TestIntegrationPublishRangedCNIConfig runs the two scripts
// PublishRangedCNIConfig puts in kube-router's DaemonSet, as the pod runs
// them (the init container's, then the kube-router container's in front
// of kube-router), in a container of the real engine with busybox's shell
// and tools, and a stand-in kube-router that writes the range 2 s in. The
// runtime's configuration must appear only after that, with the ranged
// content, renamed into place (no temporary file left), and a stale *.conf
// must be gone.
func TestIntegrationPublishRangedCNIConfig(t *testing.T) {
	r := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The kube-router container's command is the stand-in, which the
	// publish script wraps.
	m := strings.Replace(kubeRouterManifest, "        args:\n", "        command: [/bin/sh, -c, "+quote(fakeKubeRouter)+"]\n        args:\n", 1)
	_, ds := publishedDaemonSet(t, m)
	ic, c := ds.Spec.Template.Spec.InitContainers[0], ds.Spec.Template.Spec.Containers[0]

	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	// The pod: the ConfigMap's file and a stale .conf in place, then the
	// init container's command, then the container's (sh -c SCRIPT NAME
	// sh -c FAKE) with its env.
	env := []string{"UNRANGED=" + unranged, "RANGED=" + ranged, "INSTALL=" + ic.Command[2]}
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	pod := `mkdir -p /etc/kube-router /etc/cni/net.d &&
printf '%s' "$UNRANGED" >/etc/kube-router/cni-conf.json &&
echo '{}' >/etc/cni/net.d/99-stale.conf &&
/bin/sh -c "$INSTALL" &&
exec "$@"`
	id := runTestContainer(ctx, t, r, "capd-e2e-cnipublish-", runtime.ContainerSpec{
		Image:      ref,
		Entrypoint: append([]string{"/bin/sh", "-c", pod, "pod"}, c.Command...),
		Cmd:        []string{},
		Env:        env,
	})

	sh := func(script string) (string, int) {
		t.Helper()
		var stdout bytes.Buffer
		res, err := r.Exec(ctx, id, runtime.ExecOptions{Cmd: []string{"sh", "-c", script}, Stdout: &stdout})
		if err != nil {
			t.Fatalf("exec %q: %v", script, err)
		}
		return stdout.String(), res.ExitCode
	}
	// Wait for the publication; the stand-in writes the range after 2 s.
	var published string
	for {
		if s, rc := sh("cat " + KubeRouterCNIConfig); rc == 0 {
			published = s
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never appeared: %v", KubeRouterCNIConfig, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if published != ranged {
		t.Errorf("published %q, want the ranged configuration %q", published, ranged)
	}
	if s, _ := sh("cat /tmp/faults 2>/dev/null"); s != "" {
		t.Errorf("faults:\n%s", s)
	}
	if s, _ := sh("cd /etc/cni/net.d && ls -A . kube-router"); s != ".:\n10-kuberouter.conflist\nkube-router\n\nkube-router:\n10-kuberouter.conflist\n" {
		t.Errorf("/etc/cni/net.d holds:\n%s\nwant only the published file and the template (no stale .conf, no .tmp)", s)
	}
	var o, e bytes.Buffer
	if err := r.Logs(ctx, id, &o, &e); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("capd-e2e: published %s to %s", KubeRouterCNITemplate, KubeRouterCNIConfig); strings.Count(o.String(), want) != 1 {
		t.Errorf("want one %q in the output, got:\n%s%s", want, o.String(), e.String())
	}
}

// runTestContainer runs spec as a container named prefix plus a run id,
// labelled with that run id, and removes it when t ends, first logging its
// output if t failed.
func runTestContainer(ctx context.Context, t *testing.T, r runtime.Runtime, prefix string, spec runtime.ContainerSpec) string {
	t.Helper()
	runID := runtime.NewRunID()
	spec.Name = prefix + runID
	spec.Labels = runtime.RunLabels(runID, "cnipublish-integration-test", nil)
	id, err := r.RunContainer(ctx, spec)
	if err != nil {
		t.Fatalf("run container: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if t.Failed() {
			var o, e bytes.Buffer
			_ = r.Logs(ctx, id, &o, &e)
			t.Logf("container output:\n%s%s", o.String(), e.String())
		}
		if err := r.RemoveContainer(ctx, id); err != nil {
			t.Errorf("remove container %s: %v", spec.Name, err)
		}
	})
	return id
}

// quote makes s one double-quoted YAML scalar (a JSON string is one).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestIntegrationKubeRouterKubeconfig runs the kube-router container's
// command as PublishRangedCNIConfig renders it, in a container of the real
// engine with busybox's shell, in front of a stand-in that prints its
// arguments: kube-router gets --kubeconfig with kube-proxy's kubeconfig
// when the file is there, and runs as shipped when it is not or when the
// arguments already choose a kubeconfig.
func TestIntegrationKubeRouterKubeconfig(t *testing.T) {
	r := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, ds := publishedDaemonSet(t, kubeRouterManifest)
	wrapper := ds.Spec.Template.Spec.Containers[0].Command[:4] // sh -c SCRIPT kube-router
	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	for name, tc := range map[string]struct {
		kubeconfig bool
		args       []string
		want       string
	}{
		"kube-proxy's kubeconfig": {true, []string{"--run-router=true"}, "args: --run-router=true --kubeconfig=" + kubeProxyKubeconfig},
		"no kube-proxy ConfigMap": {false, []string{"--run-router=true"}, "args: --run-router=true"},
		"the args choose":         {true, []string{"--run-router=true", "--kubeconfig=/etc/mine"}, "args: --run-router=true --kubeconfig=/etc/mine"},
		"the args name a master":  {true, []string{"--master=https://10.0.0.1:6443"}, "args: --master=https://10.0.0.1:6443"},
	} {
		t.Run(name, func(t *testing.T) {
			setup := "mkdir -p " + kubeProxyMountDir
			if tc.kubeconfig {
				setup += " && echo 'apiVersion: v1' >" + kubeProxyKubeconfig
			}
			fake := append([]string{"/bin/sh", "-c", `echo "args: $0 $*"`}, tc.args...)
			cmd := append(append([]string{"/bin/sh", "-c", setup + ` && exec "$@"`, "pod"}, wrapper...), fake...)
			id := runTestContainer(ctx, t, r, "capd-e2e-kubeconfig-", runtime.ContainerSpec{Image: ref, Entrypoint: cmd, Cmd: []string{}})
			if code, err := r.Wait(ctx, id); err != nil || code != 0 {
				t.Fatalf("container exited %d, %v", code, err)
			}
			var o, e bytes.Buffer
			if err := r.Logs(ctx, id, &o, &e); err != nil {
				t.Fatal(err)
			}
			var got string
			for _, l := range strings.Split(o.String(), "\n") {
				if strings.HasPrefix(l, "args: ") {
					got = strings.TrimSpace(l)
				}
			}
			if got != tc.want {
				t.Errorf("kube-router ran with %q, want %q; output:\n%s%s", got, tc.want, o.String(), e.String())
			}
			if said := strings.Contains(o.String(), "capd-e2e: kube-router reaches the API server"); said != strings.Contains(tc.want, kubeProxyKubeconfig) {
				t.Errorf("the script's message appears: %v; output:\n%s", said, o.String())
			}
		})
	}
}
