// Package suite is the reusable setup and teardown of an E2E suite that
// runs capd-e2e's specs (e2e/specs) or a provider's own: a kind management
// cluster from the harness's node image, the images the providers need
// loaded into it, cert-manager's CRDs and the harness's substitute
// controller, the local clusterctl repository and `clusterctl init`, a
// check that every provider webhook serves a certificate its caBundle
// trusts and that the API server calls it, log collection and cleanup.
// capd-e2e's own suite (e2e/) and a provider's suite (see examples/) are
// thin layers over it.
//
// Setup and Teardown are plain functions over an input struct, usable from
// any Ginkgo suite; Suite (ginkgo.go) wires them to Ginkgo with upstream's
// flags, so that a provider's whole suite is a few dozen lines.
//
// A provider's config file names only what is its own and is merged over
// the harness's config (config.Load). Setup renders the built-in providers'
// components (Cluster API's, from a release or a working tree) and the CNI
// manifest itself (framework/repository); the provider's own components
// come from its config (type url, or type kustomize built with the
// harness's kustomize, as upstream's CreateRepository does).
//
// This package builds no image (`make images` does), never pulls one
// except through build.registry's mirror or policy, and knows nothing of
// the specs that run on what it sets up: they sit above it.
package suite
