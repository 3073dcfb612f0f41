// Package docker is a Kubernetes cloud provider (k8s.io/cloud-provider) for
// the workload clusters that Cluster API's Docker provider (CAPD) makes:
// every Machine is a container, named after the Machine, labelled with its
// cluster and role, on the engine network "kind".
//
// It gives a cloud-controller-manager what CAPD does not: node metadata
// (provider ID, InternalIP, instance type, zone and region labels), node
// lifecycle (a removed container deletes its Node, a stopped or paused one
// taints it) and Services of type LoadBalancer, each served by an haproxy
// container on the cluster's network.
//
// The provider runs next to the engine: in the management cluster, one per
// workload cluster, with the engine's socket. It must never be deployed in
// the workload machines themselves (they have no engine socket, and must not
// get one), and it reaches the engine only through the interfaces of package
// framework/runtime: no docker CLI, no engine client of its own. It acts only
// on containers of its own cluster: a node whose container belongs to
// another cluster is an error, never a match.
package docker
