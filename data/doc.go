// Package data holds capd-e2e's CAPD cluster templates: plain YAML files,
// one per clusterctl flavor, that the built-in docker provider (CAPD)
// carries into the local clusterctl repository (config.RepositoryProviders:
// every data/cluster-template*.yaml).
//
//	cluster-template.yaml                  default flavor: quick-start
//	cluster-template-upgrades.yaml         "upgrades": cluster-upgrade
//	cluster-template-md-remediation.yaml   "md-remediation": machine health check, workers
//	cluster-template-kcp-remediation.yaml  "kcp-remediation": machine health check, control plane
//	cluster-template-self-hosted.yaml      "self-hosted": self-hosted
//
// kubetest/ holds the conformance specs' e2e.test flags
// (KUBETEST_CONFIGURATION): conformance.yaml, every [Conformance] test;
// conformance-fast.yaml, those that may run in parallel.
//
// There is no Go code here, only the test that renders every template the
// way the suite does (upstream's CreateRepository with the CNI injected,
// then clusterctl's template processing) and decodes the result into
// Cluster API's and CAPD's Go types.
package data
