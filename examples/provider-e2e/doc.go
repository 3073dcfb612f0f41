// Package providere2e shows how a provider's own E2E suite reuses capd-e2e's
// specs: it brings its own config file and management cluster, and calls
// specs.QuickStartSpec. `make test` in capd-e2e compiles it (build tag e2e)
// so the example cannot rot.
package providere2e
