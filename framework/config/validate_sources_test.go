package config

import (
	"strings"
	"testing"
)

// TestValidateNetworkSources checks what Validate accepts offline of
// upstream's release markers and http(s) sources, and that each malformed
// one is an error naming the field.
func TestValidateNetworkSources(t *testing.T) {
	const field = "providers[0].versions[0]."
	tests := []struct {
		name, version, value, typ string
		want                      string // "" for valid
	}{
		{name: "stable marker", version: "{go://sigs.k8s.io/cluster-api@v1.13}"},
		{name: "latest marker", version: "{go://sigs.k8s.io/cluster-api@latest-v1.13}"},
		{name: "marker in the URL", version: "{go://sigs.k8s.io/cluster-api@v1.13}",
			value: "https://github.com/kubernetes-sigs/cluster-api/releases/download/{go://sigs.k8s.io/cluster-api@v1.13}/core-components.yaml"},
		{name: "major version suffix", version: "{go://sigs.k8s.io/cluster-api-provider-aws/v2@v2.8}"},
		{name: "v0 series", version: "{go://example.com/p@v0.0}"},
		{name: "http URL", version: "v0.1.0", value: "http://127.0.0.1:8080/components.yaml"},
		{name: "https URL", version: "v0.1.0", value: "https://example.com/releases/v0.1.0/components.yaml"},

		{name: "no minor", version: "{go://example.com/p@v1}",
			want: field + `name: Invalid value: "{go://example.com/p@v1}" is not a release marker: want {go://<module path>@v<major>.<minor>}`},
		{name: "a patch", version: "{go://example.com/p@v1.14.2}", want: field + `name: Invalid value: "{go://example.com/p@v1.14.2}" is not a release marker`},
		{name: "no v", version: "{go://example.com/p@1.14}", want: field + `name: Invalid value: "{go://example.com/p@1.14}" is not a release marker`},
		{name: "latest alone", version: "{go://example.com/p@latest}", want: field + `name: Invalid value: "{go://example.com/p@latest}" is not a release marker`},
		{name: "no version", version: "{go://example.com/p}", want: field + `name: Invalid value: "{go://example.com/p}" is not a release marker`},
		{name: "leading zero", version: "{go://example.com/p@v1.013}", want: field + `name: Invalid value: "{go://example.com/p@v1.013}" is not a release marker`},
		{name: "other scheme", version: "{github://example/p@v1.14}", want: field + `name: Invalid value: "{github://example/p@v1.14}" is not a release marker`},
		{name: "unclosed", version: "{go://example.com/p@v1.14", want: field + `name: Invalid value: "{go://example.com/p@v1.14" is not a release marker`},
		{name: "bad module path", version: "{go://Example.com/p@v1.14}",
			want: field + `name: Invalid value: release marker "{go://Example.com/p@v1.14}": malformed module path "Example.com/p"`},
		{name: "module path without a dot", version: "{go://cluster-api@v1.14}",
			want: field + `name: Invalid value: release marker "{go://cluster-api@v1.14}": malformed module path "cluster-api": missing dot in first path element`},
		{name: "major mismatch", version: "{go://example.com/p/v2@v3.1}",
			want: field + `name: Invalid value: release marker "{go://example.com/p/v2@v3.1}": module example.com/p/v2 holds major version v2 only, not v3.1`},
		{name: "marker of a kustomization", version: "{go://example.com/p@v1.14}", typ: KustomizeSource,
			want: field + `name: Invalid value: release marker "{go://example.com/p@v1.14}" needs type url (upstream resolves markers of url sources only), not "kustomize"`},
		{name: "another marker in the value", version: "v0.1.0", value: "https://example.com/{go://example.com/p@v1.14}/c.yaml",
			want: field + `value: Invalid value: "https://example.com/{go://example.com/p@v1.14}/c.yaml" holds a release marker that is not the version's name "v0.1.0"`},
		{name: "URL without a host", version: "v0.1.0", value: "http:///components.yaml",
			want: field + `value: Invalid value: "http:///components.yaml" is not an http(s) URL with a host`},
		{name: "URL that does not parse", version: "v0.1.0", value: "https://exa mple.com/c.yaml",
			want: field + `value: Invalid value: "https://exa mple.com/c.yaml" is not an http(s) URL with a host`},
		{name: "remote kustomization", version: "v0.1.0", value: "https://example.com/config/default", typ: KustomizeSource,
			want: field + `value: Invalid value: "https://example.com/config/default": a remote kustomization is fetched by kustomize itself`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadRepoConfig(t)
			v := &withProvider(c).Versions[0]
			v.Name = tt.version
			if tt.value != "" {
				v.Value = tt.value
			}
			if tt.typ != "" {
				v.Type = tt.typ
			}
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v\nwant it to contain %q", err, tt.want)
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
				t.Errorf("Validate() reported %d problems, want 1:\n%v", n, err)
			}
		})
	}
}

func TestParseReleaseMarker(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want ReleaseMarker
	}{
		{"{go://sigs.k8s.io/cluster-api@v1.13}", ReleaseMarker{Module: "sigs.k8s.io/cluster-api", Series: "v1.13"}},
		{"{go://github.com/Azure/p@latest-v0.4}", ReleaseMarker{Module: "github.com/Azure/p", Series: "v0.4", Prereleases: true}},
	} {
		got, err := ParseReleaseMarker(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseReleaseMarker(%s) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("String() = %s, want %s", got.String(), tt.in)
		}
	}
	if IsReleaseMarker("v1.13.0") || !IsReleaseMarker("{go://x") {
		t.Error("IsReleaseMarker: a version is not a marker, a name starting with { is meant as one")
	}
}
