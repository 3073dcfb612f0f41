// secrets is `capd-e2e secrets`: it finds and removes credentials in an
// artifacts folder before it is published (see package framework/secrets
// for what it detects).
//
//	capd-e2e secrets scan PATH...    report secrets; change nothing
//	capd-e2e secrets redact PATH...  replace secrets in place
//
// PATH is a folder, walked without following symbolic links, or a file.
// scan prints one line per secret, "path:line: kind fingerprint" (never the
// secret), then the files that hold one and can be read by others than
// their owner; it exits 1 when it found a secret. redact prints the files it
// rewrote. Both print a summary on standard error and exit 2 when a file
// could not be read or rewritten (the others are still done) or on a usage
// error.

package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/framework/secrets"
)

func newSecretsCommand(streams streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Find (scan) or remove (redact) credentials in an artifacts folder",
	}
	for _, verb := range []string{"scan", "redact"} {
		short := "Report secrets, one line each (never the secret); exit 1 when there is one"
		if verb == "redact" {
			short = "Replace secrets in place; print the files rewritten"
		}
		cmd.AddCommand(&cobra.Command{
			Use:   verb + " PATH...",
			Short: short,
			Args:  cobra.MinimumNArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				return exitCode(runSecrets(append([]string{verb}, args...), streams.out, streams.err))
			},
		})
	}
	return cmd
}

const secretsUsage = "usage: capd-e2e secrets scan|redact PATH..."

func runSecrets(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "scan" && args[0] != "redact" {
		fmt.Fprintln(stderr, secretsUsage)
		return 2
	}
	verb, found, failed := args[0], false, false
	for _, root := range args[1:] {
		var rep secrets.Report
		var err error
		if verb == "scan" {
			rep, err = secrets.ScanTree(root)
		} else {
			rep, err = secrets.RedactTree(root)
		}
		if err != nil {
			failed = true
			for _, e := range unjoin(err) {
				fmt.Fprintln(stderr, "capd-e2e secrets:", e)
			}
		}
		// Paths relative to a folder given as root are shown under it.
		at := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
		if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
			at = func(string) string { return root }
		}
		switch verb {
		case "scan":
			for _, f := range rep.Findings {
				f.Path = at(f.Path)
				fmt.Fprintln(stdout, f)
			}
			for _, x := range rep.Exposed() {
				fmt.Fprintf(stdout, "%s: mode %v, wider than 0600, holds %v\n", at(x.Path), x.Mode, x.Kinds)
			}
			found = found || len(rep.Findings) > 0
		case "redact":
			for _, p := range rep.Redacted {
				fmt.Fprintln(stdout, "redacted", at(p))
			}
		}
		fmt.Fprintf(stderr, "%s %s: %d files, %.1f MB read, %d binary and %d other entries skipped; %d secrets in %d files\n",
			verb, root, rep.Files, float64(rep.Bytes)/1e6, len(rep.Binary), len(rep.Skipped), len(rep.Findings), countFiles(rep.Findings))
	}
	switch {
	case failed:
		return 2
	case found:
		return 1
	}
	return 0
}

// countFiles counts the files of findings sorted by path.
func countFiles(fs []secrets.Finding) int {
	n := 0
	for i, f := range fs {
		if i == 0 || f.Path != fs[i-1].Path {
			n++
		}
	}
	return n
}

// unjoin splits an errors.Join error into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
