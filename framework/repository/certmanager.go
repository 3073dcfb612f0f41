package repository

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// UseExternalCertManager amends a clusterctl configuration file so that
// `clusterctl init` treats cert-manager as provided by someone else
// (`cert-manager: {externallyProvisioned: "true"}`, read by clusterctl's
// cert_manager_client.go): it then installs no cert-manager and only checks
// that cert-manager's resources can be created. The harness installs
// cert-manager's CRDs and its own substitute controller first.
//
// Upstream's CreateRepository writes e2e variables as top-level strings, so
// this nested key cannot come from an e2e variable; it is added here.
func UseExternalCertManager(clusterctlConfigPath string) error {
	data, err := os.ReadFile(clusterctlConfigPath)
	if err != nil {
		return fmt.Errorf("read clusterctl config: %w", err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("parse clusterctl config %s: %w", clusterctlConfigPath, err)
	}
	cm, _ := values["cert-manager"].(map[string]any)
	if cm == nil {
		cm = map[string]any{}
	}
	cm["externallyProvisioned"] = "true"
	values["cert-manager"] = cm
	out, err := yaml.Marshal(values)
	if err != nil {
		return fmt.Errorf("write clusterctl config: %w", err)
	}
	if err := os.WriteFile(clusterctlConfigPath, out, 0o600); err != nil {
		return fmt.Errorf("write clusterctl config: %w", err)
	}
	return nil
}
