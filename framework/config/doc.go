// Package config loads and validates config/e2e.yaml, the one file that
// says what the harness builds and how the E2E suite runs.
//
// The file is a superset of Cluster API's E2EConfig
// (sigs.k8s.io/cluster-api/test/framework/clusterctl): managementClusterName,
// images, providers, variables and intervals mean what they mean upstream,
// and upstream's loader reads the same file (it ignores the extra keys). The
// extra top-level key, build, holds every version and image name that
// `make images` needs, so that no version lives in code. This package reads
// the run's part of it (the images a run uses, Cluster API, cert-manager,
// the registry policy); how each image is built is the image factory's part
// (factory/buildspec), whose keys (FactoryKeys) it accepts unread.
//
// This package only reads and checks: it must not touch the network, a
// container engine or the file system beyond reading the config file, and it
// must not import the Cluster API test framework (sub-package upstream does,
// so that image builds do not pay for it).
package config
