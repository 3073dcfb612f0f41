// Command capd-e2e is the CAPD end-to-end harness's command line: images,
// run, clean, engine, secrets and load (see package internal/cli, or
// `capd-e2e --help`).
package main

import (
	"os"

	"github.com/capd-e2e/capd-e2e/internal/cli"
)

func main() { os.Exit(cli.Main()) }
