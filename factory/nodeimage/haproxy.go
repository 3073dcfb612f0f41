package nodeimage

import (
	"context"
	"errors"
	"fmt"

	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// HAProxyConfigPath is where CAPD reads and writes the load balancer's
// configuration (CAPD v1.14.2 internal/loadbalancer ConfigPath).
const HAProxyConfigPath = "/usr/local/etc/haproxy/haproxy.cfg"

// HAProxyEntrypoint is the command CAPD runs the load balancer with; the
// image uses it too, so that it also starts on its own.
var HAProxyEntrypoint = []string{"haproxy", "-W", "-db", "-f", HAProxyConfigPath}

// HAProxyStopSignal makes haproxy stop gracefully (SIGTERM stops it at once).
const HAProxyStopSignal = "SIGUSR1"

// haproxyWrapperPath comes before /usr/sbin in the image's PATH, so it is
// the "haproxy" that CAPD's entrypoint runs.
const haproxyWrapperPath = "/usr/local/sbin/haproxy"

// HAProxyWrapper caps haproxy's maxconn to what the container's open-file
// limit allows. The configuration CAPD writes sets maxconn 100000, for which
// haproxy needs about 200,000 file descriptors and, when it cannot raise its
// limit that far, refuses to start ("Cannot raise FD limit"). Containers get
// the engine's limit (20,000 here) and cannot raise it without
// CAP_SYS_RESOURCE, which these machines' engines lack. haproxy's -n option
// overrides the configuration's maxconn and is kept across reloads (the
// master re-executes itself with the same arguments).
const HAProxyWrapper = `#!/bin/sh
# Installed by capd-e2e: see factory/nodeimage (HAProxyWrapper).
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 200100 ]; then
  ulimit -n "$hard" 2>/dev/null || true
  exec /usr/sbin/haproxy -n $(( (hard - 100) / 2 )) "$@"
fi
exec /usr/sbin/haproxy "$@"
`

// HAProxyDefaultConfig is the configuration the image starts with: the
// ports CAPD publishes (6443 for the API servers, 8404 for statistics) and
// no backend server yet. CAPD replaces it with its own once it knows the
// control plane machines, then sends SIGHUP.
const HAProxyDefaultConfig = `# capd-e2e's default load balancer configuration. CAPD overwrites this
# file with the cluster's configuration and reloads haproxy (SIGHUP).
defaults
  mode tcp
  timeout connect 5s
  timeout client 50s
  timeout server 50s

frontend stats
  mode http
  bind *:8404
  stats enable
  stats uri /stats

frontend control-plane
  bind *:6443
  default_backend kube-apiservers

backend kube-apiservers
`

// HAProxyFiles are the repository paths whose content shapes the load
// balancer image; give them to plan.Options.Files for plan.KindHAProxy so
// that a change rebuilds it.
var HAProxyFiles = []string{"factory/nodeimage/haproxy.go", "factory/oci"}

// HAProxyBuilder builds plan.KindHAProxy: CAPD's load balancer image, on a
// rootfs image with Debian's haproxy package.
type HAProxyBuilder struct {
	// Images stores the image. Required.
	Images runtime.Images
}

var _ plan.Builder = (*HAProxyBuilder)(nil)

// Build adds HAProxyDefaultConfig and HAProxyWrapper to the rootfs image
// step.Inputs["from"] and sets HAProxyEntrypoint, HAProxyStopSignal and
// step.Labels().
func (b *HAProxyBuilder) Build(ctx context.Context, step plan.Step) error {
	if b.Images == nil {
		return fmt.Errorf("build load balancer image %q: %w", step.Image, errors.New("HAProxyBuilder.Images is nil"))
	}
	from := step.Inputs[plan.InputFrom]
	if from == "" {
		return fmt.Errorf("build load balancer image %q: input %q is not set", step.Image, plan.InputFrom)
	}
	err := oci.Build(ctx, b.Images, oci.Spec{
		Ref:  step.Image,
		Base: from,
		Layers: []oci.Layer{oci.LayerFromFiles([]oci.File{
			{Path: HAProxyConfigPath, Mode: 0o644, Data: []byte(HAProxyDefaultConfig)},
			{Path: haproxyWrapperPath, Mode: 0o755, Data: []byte(HAProxyWrapper)},
		})},
		Config: oci.Config{
			Entrypoint: HAProxyEntrypoint,
			StopSignal: HAProxyStopSignal,
			Labels:     step.Labels(),
		},
	})
	if err != nil {
		return fmt.Errorf("build load balancer image %q: %w", step.Image, err)
	}
	return nil
}
