package suite

import (
	"testing"

	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

func TestSetEngineSocketFollowsTheEngine(t *testing.T) {
	podman := runtime.EngineInfo{Endpoint: "unix:///run/podman/podman.sock", Podman: true}
	e2e := &clusterctl.E2EConfig{}
	setEngineSocket(e2e, podman)
	if got := e2e.Variables[config.VarContainerEngineSocket]; got != "/run/podman/podman.sock" {
		t.Errorf("on Podman: %s = %q, want the service's socket", config.VarContainerEngineSocket, got)
	}

	e2e = &clusterctl.E2EConfig{Variables: map[string]string{config.VarContainerEngineSocket: "/srv/engine.sock"}}
	setEngineSocket(e2e, podman)
	if got := e2e.Variables[config.VarContainerEngineSocket]; got != "/srv/engine.sock" {
		t.Errorf("set in the config: %q, want it kept", got)
	}

	t.Setenv(config.VarContainerEngineSocket, "/from/env.sock")
	e2e = &clusterctl.E2EConfig{}
	setEngineSocket(e2e, podman)
	if _, set := e2e.Variables[config.VarContainerEngineSocket]; set {
		t.Errorf("set in the environment: the suite set it too (%v)", e2e.Variables)
	}
}

func TestSetEngineSocketLeavesATCPEngineToTheDefault(t *testing.T) {
	e2e := &clusterctl.E2EConfig{}
	setEngineSocket(e2e, runtime.EngineInfo{Endpoint: "tcp://10.0.0.1:2376"})
	if v, set := e2e.Variables[config.VarContainerEngineSocket]; set {
		t.Errorf("tcp engine: %s = %q, want unset", config.VarContainerEngineSocket, v)
	}
}
