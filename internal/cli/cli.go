// Package cli is capd-e2e's command line: one binary, capd-e2e, with a
// subcommand per job, in the ecosystem's convention (kind's and
// clusterctl's: github.com/spf13/cobra, GNU-style flags):
//
//	capd-e2e images    provide the images the selected specs need (make images)
//	capd-e2e run       the supervised E2E run: images, the suite, the checks after it (make test-e2e)
//	capd-e2e clean     remove what dead runs left in the engine (make clean-e2e)
//	capd-e2e engine    report on the engine: version, objects, dump
//	capd-e2e secrets   scan or redact credentials in an artifacts folder
//	capd-e2e load      load images into a kind cluster's nodes
//	capd-e2e up        a management and a workload cluster kept to explore (make up)
//	capd-e2e down      remove what up kept (make down)
//	capd-e2e iterate   the inner loop on up's clusters (make iterate)
//
// Exit codes: 0 success; 1 the job failed (or, for clean --check and
// secrets scan, found something); 2 a usage error or a check that could
// not be made.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/factory/imagescmd"
)

// streams are where a command writes.
type streams struct{ out, err io.Writer }

// exitError is a command's exit code, with what to say (if anything).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

// exitCode turns a subcommand's exit code into RunE's error: nil for 0;
// the command has said why already.
func exitCode(code int) error {
	if code == 0 {
		return nil
	}
	return exitError{code: code}
}

// usageError is a bad command line: exit code 2.
func usageError(err error) error { return exitError{code: 2, err: err} }

// NewCommand returns the capd-e2e command.
func NewCommand(out, errOut io.Writer) *cobra.Command {
	s := streams{out: out, err: errOut}
	root := &cobra.Command{
		Use:           "capd-e2e",
		Short:         "The CAPD end-to-end harness's tools",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(out)
	root.SetErr(errOut)
	// A flag that does not parse, or arguments a command does not take,
	// are usage errors (exit code 2), as the commands' own.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	images := imagescmd.Command(out, errOut)
	root.AddCommand(
		images,
		newRunCommand(s),
		newCleanCommand(s),
		newEngineCommand(s),
		newSecretsCommand(s),
		newLoadCommand(s),
		newUpCommand(s),
		newDownCommand(s),
		newIterateCommand(s),
	)
	for _, c := range root.Commands() {
		markRuns(root, c)
	}
	return root
}

// markRuns marks on root that cmd or one of its subcommands got as far as
// running: cobra's errors before that (an unknown command, arguments or
// flags a command does not take) are usage errors.
func markRuns(root, cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			root.Annotations = map[string]string{started: "true"}
			return run(c, args)
		}
	}
	for _, c := range cmd.Commands() {
		markRuns(root, c)
	}
}

// Main runs capd-e2e with os.Args and returns its exit code. SIGINT and
// SIGTERM cancel the command's context (capd-e2e run handles them
// itself: see run.go).
func Main() int {
	cmd := NewCommand(os.Stdout, os.Stderr)
	ctx := context.Background()
	if c, _, err := cmd.Find(os.Args[1:]); err != nil || c.Name() != "run" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	return execute(ctx, cmd, os.Args[1:], os.Stderr)
}

// execute runs cmd with args and maps its error to an exit code.
func execute(ctx context.Context, cmd *cobra.Command, args []string, errOut io.Writer) int {
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(errOut, "capd-e2e:", ee.err)
			if ee.code == 2 {
				fmt.Fprintln(errOut, "Run 'capd-e2e --help' for usage.")
			}
		}
		return ee.code
	}
	fmt.Fprintln(errOut, "capd-e2e:", err)
	if cmd.Annotations[started] == "" {
		return 2
	}
	return 1
}

// started is the root command's annotation saying a command ran.
const started = "capd-e2e/started"
