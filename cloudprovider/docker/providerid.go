package docker

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
)

// providerIDPrefix starts every provider ID: CAPD writes
// "docker:////<container name>" (internal/docker Machine.ProviderID), an
// empty host and an absolute path, and this provider keeps that format so
// that the two agree whichever sets spec.providerID first.
const providerIDPrefix = names.ProviderIDPrefix

// containerName matches the names the engine accepts.
var containerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// ProviderID returns the provider ID of the machine in container name.
func ProviderID(container string) string { return providerIDPrefix + container }

// ParseProviderID returns the container name in a provider ID of the form
// "docker:////<container name>".
func ParseProviderID(providerID string) (string, error) {
	name, ok := strings.CutPrefix(providerID, providerIDPrefix)
	if !ok {
		return "", fmt.Errorf("parse provider ID %q: want the form %s<container name>", providerID, providerIDPrefix)
	}
	if !containerName.MatchString(name) {
		return "", fmt.Errorf("parse provider ID %q: %q is not a container name", providerID, name)
	}
	return name, nil
}
