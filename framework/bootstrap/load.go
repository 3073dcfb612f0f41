package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// LoadResult reports what LoadImages did on one node.
type LoadResult struct {
	Node string
	Err  error
}

// ImageLoader is what LoadImages needs of the engine: the images, and an
// exec into each node.
type ImageLoader interface {
	InspectImage(ctx context.Context, ref string) (runtime.Image, error)
	SaveImages(ctx context.Context, refs ...string) (io.ReadCloser, error)
	Exec(ctx context.Context, nameOrID string, opts runtime.ExecOptions) (runtime.ExecResult, error)
}

// LoadImages streams refs from the engine into the containerd of every node
// (the k8s.io namespace, where the kubelet looks), all nodes at once. Each
// node gets its own `SaveImages` stream piped into `ctr images import` on
// its standard input: nothing is written to a temporary file. Images are
// imported without being pinned, as a pull would leave them.
//
// It returns an error naming every node that failed, with ctr's stderr.
func LoadImages(ctx context.Context, rt ImageLoader, nodes, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	if len(nodes) == 0 {
		return errors.New("load images: no nodes given")
	}
	for _, ref := range refs {
		if _, err := rt.InspectImage(ctx, ref); err != nil {
			return fmt.Errorf("load images: %w", err)
		}
	}
	var wg sync.WaitGroup
	results := make([]LoadResult, len(nodes))
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = LoadResult{Node: node, Err: loadIntoNode(ctx, rt, node, refs)}
		}()
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errors.Join(errs...)
}

func loadIntoNode(ctx context.Context, rt ImageLoader, node string, refs []string) error {
	archive, err := rt.SaveImages(ctx, refs...)
	if err != nil {
		return fmt.Errorf("load images into node %q: %w", node, err)
	}
	defer archive.Close()
	var stderr bytes.Buffer
	cmd := []string{"ctr", "--namespace=k8s.io", "images", "import", "--all-platforms", "--digests", "-"}
	res, err := rt.Exec(ctx, node, runtime.ExecOptions{Cmd: cmd, Stdin: archive, Stderr: &stderr, Privileged: true})
	if err != nil {
		return fmt.Errorf("load images into node %q: %w", node, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("load images into node %q: %w", node,
			&runtime.ExitError{Container: node, Cmd: cmd, ExitCode: res.ExitCode, Stderr: stderr.Bytes()})
	}
	// ctr exits 0 even when an archive held nothing usable: check each ref.
	out, err := runtime.Output(ctx, rt, node, "ctr", "--namespace=k8s.io", "images", "list", "--quiet")
	if err != nil {
		return fmt.Errorf("list images on node %q: %w", node, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		have[l] = true
	}
	var missing []string
	for _, ref := range refs {
		if !have[ref] && !have[normalize(ref)] {
			missing = append(missing, ref)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("load images into node %q: not in containerd after import: %s", node, strings.Join(missing, ", "))
	}
	return nil
}

// normalize returns the fully qualified form containerd stores a reference
// under ("busybox:1" -> "docker.io/library/busybox:1").
func normalize(ref string) string {
	name := ref
	if i := strings.IndexByte(name, '/'); i < 0 {
		return "docker.io/library/" + ref
	} else if first := name[:i]; !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + ref
	}
	return ref
}
