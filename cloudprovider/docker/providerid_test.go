package docker_test

import (
	"testing"

	"github.com/capd-e2e/capd-e2e/cloudprovider/docker"
)

func TestParseProviderID(t *testing.T) {
	for _, tc := range []struct {
		id, want string
		ok       bool
	}{
		{"docker:////c1-md-0-abcde-x7k2p", "c1-md-0-abcde-x7k2p", true},
		{"docker:////C1_cp.0", "C1_cp.0", true},
		{"", "", false},
		{"docker://c1-md-0", "", false},    // CAPD writes four slashes
		{"docker:///c1-md-0", "", false},   // three
		{"docker://///c1-md-0", "", false}, // five: the name would start with "/"
		{"docker:////", "", false},         // no name
		{"docker:////a/b", "", false},      // not a container name
		{"docker:////-leading", "", false}, // names start alphanumeric
		{"aws:////c1-md-0", "", false},     // another provider
		{"kind://docker/c1/c1-md-0", "", false},
	} {
		got, err := docker.ParseProviderID(tc.id)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseProviderID(%q) = %q, %v; want %q", tc.id, got, err, tc.want)
		}
		if !tc.ok && err == nil {
			t.Errorf("ParseProviderID(%q) = %q, want an error", tc.id, got)
		}
	}
	if id := docker.ProviderID("c1-cp-0"); id != "docker:////c1-cp-0" {
		t.Errorf("ProviderID = %q", id)
	}
	if name, err := docker.ParseProviderID(docker.ProviderID("c1-cp-0")); err != nil || name != "c1-cp-0" {
		t.Errorf("round trip: %q, %v", name, err)
	}
}
