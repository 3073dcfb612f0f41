package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/secrets"
	"github.com/capd-e2e/capd-e2e/framework/snapshot"
)

// Teardown collects the management cluster's logs and container snapshot,
// deletes it (unless SkipCleanup), checks nothing of the run is left and
// closes the runtime it opened. It works on an Environment that Setup left
// half-built, and reports every problem it met.
func (e *Environment) Teardown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	if e.stopWatches != nil {
		defer e.stopWatches()
	}
	var errs []error
	if e.kind != nil && e.Runtime != nil {
		errs = append(errs, collectKind(ctx, e.kind, e.Runtime, filepath.Join(e.ArtifactFolder, "clusters", "bootstrap")))
	}
	if e.SkipCleanup {
		errs = append(errs, e.keep(ctx), e.redactArtifacts())
		return errors.Join(errs...)
	}
	if e.BootstrapClusterProxy != nil {
		e.BootstrapClusterProxy.Dispose(ctx)
	}
	if e.kind != nil {
		errs = append(errs, deleteKind(ctx, e.kind, e.Runtime))
	}
	if e.Runtime != nil {
		// Everything of the run: its labelled objects and the containers of
		// every cluster it tracked. Clean, the run's markers go too.
		if e.tracker != nil {
			errs = append(errs, finishRun(ctx, e.Runtime, e.RunID))
		}
		if e.ownRuntime {
			errs = append(errs, e.Runtime.Close())
		}
	}
	errs = append(errs, e.redactArtifacts())
	if e.privateDir != "" && !e.SkipCleanup {
		errs = append(errs, os.RemoveAll(e.privateDir))
	}
	if e.kubeadmDir != "" && !e.SkipCleanup {
		errs = append(errs, os.RemoveAll(e.kubeadmDir))
	}
	return errors.Join(errs...)
}

// finishRun checks that the run left nothing; what it left is removed,
// so that nothing outlives the run, and returned as the error that fails
// the suite.
func finishRun(ctx context.Context, rt leak.Engine, runID string) error {
	left, err := leak.ClearRun(ctx, rt, runID)
	if left.Empty() {
		return err
	}
	return errors.Join(fmt.Errorf("the run left objects behind (now removed): %w", left.Err()), err)
}

// redactArtifacts replaces every secret in the artifacts folder (bootstrap
// tokens in KubeadmConfig dumps, keys, kubeconfig credentials; see
// framework/secrets) and fails when a second scan still finds one.
func (e *Environment) redactArtifacts() error {
	if e.ArtifactFolder == "" {
		return nil
	}
	rep, err := secrets.RedactTree(e.ArtifactFolder)
	if err != nil {
		return fmt.Errorf("redact the artifacts: %w", err)
	}
	if len(rep.Redacted) > 0 && e.log != nil {
		e.log("teardown: redacted %d secrets in %d files of %s:", len(rep.Findings), len(rep.Redacted), e.ArtifactFolder)
		for _, f := range rep.Findings {
			e.log("teardown:   %s", f) // path:line kind fingerprint, never the secret
		}
	}
	after, err := secrets.ScanTree(e.ArtifactFolder)
	if err != nil {
		return fmt.Errorf("scan the artifacts for secrets: %w", err)
	}
	if len(after.Findings) > 0 {
		return fmt.Errorf("secrets remain in the artifacts after redaction: %v", after.Findings)
	}
	return nil
}

// collectKind collects a kind cluster's node logs into dir/machines and
// its container snapshot into dir (a snapshot that cannot be taken, the
// engine gone, is left out; one taken but not saved is an error).
func collectKind(ctx context.Context, k *bootstrap.KindCluster, rt runtime.Runtime, dir string) error {
	var err error
	if cerr := k.CollectLogs(ctx, filepath.Join(dir, "machines")); cerr != nil {
		err = fmt.Errorf("collect the logs of kind cluster %q's nodes: %w", k.Name, cerr)
	}
	if s, serr := snapshot.Take(ctx, rt, snapshot.Filter{Cluster: k.Name}); serr == nil {
		if serr := s.Save(dir); serr != nil {
			err = errors.Join(err, fmt.Errorf("save kind cluster %q's container snapshot: %w", k.Name, serr))
		}
	}
	return err
}

// deleteKind deletes a kind cluster and, with an engine, checks that none
// of its containers is left.
func deleteKind(ctx context.Context, k *bootstrap.KindCluster, rt runtime.Runtime) error {
	errs := []error{k.Delete(ctx)}
	if rt != nil {
		rep, err := leak.Check(ctx, rt, leak.Selector{Cluster: k.Name})
		errs = append(errs, err, rep.Err())
	}
	return errors.Join(errs...)
}
