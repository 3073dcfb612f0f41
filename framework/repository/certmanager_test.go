package repository

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestUseExternalCertManager(t *testing.T) {
	p := filepath.Join(t.TempDir(), "clusterctl-config.yaml")
	if err := os.WriteFile(p, []byte("providers: []\nKUBERNETES_VERSION: v1.36.3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UseExternalCertManager(p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	var got struct {
		CertManager struct {
			ExternallyProvisioned string `json:"externallyProvisioned"`
		} `json:"cert-manager"`
		KubernetesVersion string `json:"KUBERNETES_VERSION"`
	}
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.CertManager.ExternallyProvisioned != "true" || got.KubernetesVersion != "v1.36.3" {
		t.Errorf("config after amend:\n%s", b)
	}
	if err := UseExternalCertManager(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
}
