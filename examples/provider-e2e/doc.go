// Package providere2e is a provider's own E2E suite on capd-e2e, as a
// provider would write it: suite_test.go (the whole suite) and
// config/e2e.yaml (only what is the provider's own, merged over capd-e2e's
// config). The provider here is CAPD itself, built from a directory as a
// provider's repository would hold it: `make test-examples` assembles that
// directory outside capd-e2e's tree (scripts/fixtures/capd-provider.sh),
// places this module at infrastructure/docker/e2e-capd in it, builds the
// provider's image with `make images` and runs the suite. `make test`
// compiles it (build tag e2e) so the example cannot rot.
package providere2e
