package suite

import (
	"testing"

	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

func TestSetEngineVariablesFollowTheEngine(t *testing.T) {
	podman := runtime.EngineInfo{Endpoint: "unix:///run/podman/podman.sock", Podman: true}
	e2e := &clusterctl.E2EConfig{}
	setEngineVariables(e2e, podman)
	if got := e2e.Variables[config.VarContainerEngineSocket]; got != "/run/podman/podman.sock" {
		t.Errorf("on Podman: %s = %q, want the service's socket", config.VarContainerEngineSocket, got)
	}
	if got := e2e.Variables[config.VarNodeImageRepository]; got != "docker.io/kindest/node" {
		t.Errorf("on Podman: %s = %q, want the full name Podman reports", config.VarNodeImageRepository, got)
	}

	e2e = &clusterctl.E2EConfig{Variables: map[string]string{config.VarContainerEngineSocket: "/srv/engine.sock"}}
	setEngineVariables(e2e, podman)
	if got := e2e.Variables[config.VarContainerEngineSocket]; got != "/srv/engine.sock" {
		t.Errorf("set in the config: %q, want it kept", got)
	}

	t.Setenv(config.VarContainerEngineSocket, "/from/env.sock")
	e2e = &clusterctl.E2EConfig{}
	setEngineVariables(e2e, podman)
	if _, set := e2e.Variables[config.VarContainerEngineSocket]; set {
		t.Errorf("set in the environment: the suite set it too (%v)", e2e.Variables)
	}
}

func TestSetEngineVariablesLeaveATCPDockerToTheDefaults(t *testing.T) {
	e2e := &clusterctl.E2EConfig{}
	setEngineVariables(e2e, runtime.EngineInfo{Endpoint: "tcp://10.0.0.1:2376"})
	if len(e2e.Variables) != 0 {
		t.Errorf("Docker over tcp: %v, want no variable set (the templates' defaults)", e2e.Variables)
	}
}
