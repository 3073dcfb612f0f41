package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
)

// Label keys the harness puts on every container, network and volume it
// creates, so that cleanup and leak checks find them without external state.
const (
	// LabelRunID holds the id of the harness run that created the object.
	LabelRunID = "e2e.capd.x-k8s.io/run-id"
	// LabelCreatedBy says which component created the object.
	LabelCreatedBy = "e2e.capd.x-k8s.io/created-by"
	// LabelCluster is the label CAPD itself puts on a cluster's containers.
	LabelCluster = "io.x-k8s.kind.cluster"
	// LabelRole is the label CAPD and kind put on a node container
	// ("control-plane", "worker", "external-load-balancer").
	LabelRole = "io.x-k8s.kind.role"
	// RoleExternalLoadBalancer is LabelRole's value on a cluster's load
	// balancer container, the one container of a cluster that is no node.
	RoleExternalLoadBalancer = "external-load-balancer"
)

// NewRunID returns a random run id: 12 hex characters.
func NewRunID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // cannot happen on Linux
	}
	return hex.EncodeToString(b[:])
}

// RunLabels returns labels marking an object as created by component in
// run runID, merged over extra.
func RunLabels(runID, component string, extra map[string]string) map[string]string {
	l := make(map[string]string, len(extra)+2)
	maps.Copy(l, extra)
	l[LabelRunID] = runID
	if _, ok := l[LabelOwner]; !ok {
		l[LabelOwner] = ProcessOwner()
	}
	if component != "" {
		l[LabelCreatedBy] = component
	}
	return l
}
