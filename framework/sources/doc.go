// Package sources resolves and checks the network sources of a config up
// front, so that one that cannot be reached fails suite setup before
// anything is created, naming its field, instead of failing clusterctl's
// repository or init half-way through a run.
//
// Two kinds of sources need the network, both upstream's
// (sigs.k8s.io/cluster-api/test/framework/clusterctl):
//
//   - release markers, provider version names of type url such as
//     {go://sigs.k8s.io/cluster-api@v1.13}, which stand for the latest
//     release of a minor series as the Go module proxy lists it (see
//     config.ReleaseMarker). Resolve replaces each by the version it
//     stands for, in the name and in the value, as upstream's
//     ResolveReleases does;
//   - http(s) provider values (components files), which must answer.
//
// Package config checks their form, offline (it must not touch the
// network); this package is where the network is used, and only here.
// Upstream also checks a release marker's GitHub metadata.yaml; that is
// left out, as the value check covers what the run will fetch.
package sources
