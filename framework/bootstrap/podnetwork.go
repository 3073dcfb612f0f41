package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Why the harness waits for the pod network of the management cluster.
//
// The node image's CNI, kube-router, installs its configuration before it
// knows the node's pod CIDR: host-local IPAM without a range. The node is
// Ready then, so pods are scheduled, and every sandbox fails ("no IP ranges
// specified") until kube-router writes the range, 10–20 s later on 2 cores.
// The kubelet then retries a pod only after its 10-s back-off, and a volume
// whose Secret is missing after an exponential one (up to 32 s and more). In
// one PR job on a slow VM the cert-manager substitute started 25 s after the
// range was there, the providers' certificate Secrets came later still, and
// clusterctl init took 85 s. Started once the range is there, nothing backs
// off.
//
// Neither the kubelet nor the API says when a CNI configuration can give an
// address, so the check reads the file the runtime uses, in the node.

// podNetworkScript exits 0 once the CNI configuration containerd uses (the
// first of /etc/cni/net.d in name order) can give pods an address: it exists
// and, when its IPAM is host-local, names a subnet. It looks every 100 ms,
// at most $1 times, then prints what the folder holds and exits 1.
const podNetworkScript = `ready() {
	f=$(ls /etc/cni/net.d 2>/dev/null | grep -E '\.(conf|conflist|json)$' | head -n 1)
	[ -n "$f" ] || return 1
	if grep -q '"host-local"' "/etc/cni/net.d/$f" && ! grep -q '"subnet"' "/etc/cni/net.d/$f"; then
		return 1
	fi
	return 0
}
i=0
until ready; do
	i=$((i + 1))
	if [ "$i" -gt "$1" ]; then
		echo "no CNI configuration that gives pods an address; /etc/cni/net.d holds:"
		for f in /etc/cni/net.d/*; do
			[ -f "$f" ] && echo "$f: $(tr -d ' \n\t' <"$f")"
		done
		exit 1
	fi
	sleep 0.1
done
`

// WaitPodNetwork waits until the CNI configuration of every node of the
// cluster can give pods an address, within timeout.
func (k *KindCluster) WaitPodNetwork(ctx context.Context, timeout time.Duration) error {
	nodes, err := k.Nodes(ctx)
	if err != nil {
		return err
	}
	if err := WaitPodNetwork(ctx, k.rt, nodes, timeout); err != nil {
		return fmt.Errorf("kind cluster %q: %w", k.Name, err)
	}
	return nil
}

// WaitPodNetwork waits, on every node (a container of rt) at once, until
// the CNI configuration the node's containerd uses can give pods an
// address, within timeout. An error names each node that did not get there
// and what its /etc/cni/net.d held.
func WaitPodNetwork(ctx context.Context, rt runtime.Runtime, nodes []string, timeout time.Duration) error {
	if timeout <= 0 {
		return fmt.Errorf("wait for the pod network: timeout %s is not positive", timeout)
	}
	tries := int(timeout / (100 * time.Millisecond))
	// The script ends itself after its tries; the context is the backstop
	// for a node that does not answer.
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, n := range nodes {
		wg.Go(func() {
			var out bytes.Buffer
			res, err := rt.Exec(ctx, n, runtime.ExecOptions{
				// The script on stdin keeps it out of the runtime's errors.
				Cmd:    []string{"sh", "-s", strconv.Itoa(tries)},
				Stdin:  strings.NewReader(podNetworkScript),
				Stdout: &out,
				Stderr: &out,
			})
			switch {
			case err != nil:
				err = fmt.Errorf("node %s: %w", n, err)
			case res.ExitCode != 0:
				err = fmt.Errorf("node %s, after %s: %s", n, timeout, strings.TrimSpace(out.String()))
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("wait for the pod network: %w", err)
	}
	return nil
}
