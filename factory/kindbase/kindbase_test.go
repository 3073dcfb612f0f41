package kindbase

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/capd-e2e/capd-e2e/factory/plan"
)

const criConfig = `# explicitly use v2 config format
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri"]
  # use fixed sandbox image
  sandbox_image = "registry.k8s.io/pause:3.10"
  # a comment that stays
  restrict_oom_score_adj = false
`

func TestSetTOMLValue(t *testing.T) {
	got, err := SetTOMLValue([]byte(criConfig), CRIPluginTable, "restrict_oom_score_adj", "true")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(criConfig, "restrict_oom_score_adj = false", "restrict_oom_score_adj = true", 1)
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	got, err = SetTOMLValue(got, CRIPluginTable, "sandbox_image", `"registry.k8s.io/pause:3.10.2"`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `  sandbox_image = "registry.k8s.io/pause:3.10.2"`+"\n") {
		t.Errorf("sandbox_image not set, indentation lost or newline lost:\n%s", got)
	}
}

func TestSetTOMLValueErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, table, key string }{
		// snapshotter exists, but in a sub-table only.
		"key in another table": {criConfig, CRIPluginTable, "snapshotter"},
		"missing key":          {criConfig, CRIPluginTable, "no_such_key"},
		"missing table":        {criConfig, `plugins."nope"`, "sandbox_image"},
		"duplicate key":        {criConfig + "  restrict_oom_score_adj = true\n", CRIPluginTable, "restrict_oom_score_adj"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := SetTOMLValue([]byte(tc.doc), tc.table, tc.key, "1"); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestBaseFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/local/bin/entrypoint", "#!/bin/bash\n")
	write("kind/bin/mount-product-files.sh", "#!/bin/bash\n")
	write("kind/README.txt", "readme\n")
	write("etc/containerd/config.toml", criConfig)
	write("etc/systemd/system/kubelet.service", "[Service]\n")

	files, err := BaseFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]int64{}
	content := map[string]string{}
	for _, f := range files {
		modes[f.Path], content[f.Path] = f.Mode, string(f.Data)
	}
	for p, want := range map[string]int64{
		"usr/local/bin/entrypoint":           0o755,
		"kind/bin/mount-product-files.sh":    0o755,
		"kind/README.txt":                    0o644,
		"etc/containerd/config.toml":         0o644,
		"etc/systemd/system/kubelet.service": 0o644,
		CgroupV1ScriptPath:                   0o755,
		CgroupV1DropInPath:                   0o644,
		CgroupfsScriptPath:                   0o755,
		CgroupfsDropInPath:                   0o644,
	} {
		if modes[p] != want {
			t.Errorf("%s: mode %o, want %o", p, modes[p], want)
		}
	}
	if !strings.Contains(content["etc/containerd/config.toml"], "restrict_oom_score_adj = true") {
		t.Errorf("containerd config not patched:\n%s", content["etc/containerd/config.toml"])
	}
	// What containerd's TOML parser reads, not the text: the registry
	// table must be under the CRI plugin, beside its other keys.
	var cfg struct {
		Plugins map[string]struct {
			RestrictOOMScoreAdj bool `toml:"restrict_oom_score_adj"`
			Registry            struct {
				ConfigPath string `toml:"config_path"`
			} `toml:"registry"`
		} `toml:"plugins"`
	}
	if err := toml.Unmarshal([]byte(content["etc/containerd/config.toml"]), &cfg); err != nil {
		t.Fatalf("patched containerd config is not TOML: %v\n%s", err, content["etc/containerd/config.toml"])
	}
	cri := cfg.Plugins["io.containerd.grpc.v1.cri"]
	if !cri.RestrictOOMScoreAdj || cri.Registry.ConfigPath != RegistryConfigDir {
		t.Errorf("CRI plugin: restrict_oom_score_adj %v, registry config_path %q; want true, %q", cri.RestrictOOMScoreAdj, cri.Registry.ConfigPath, RegistryConfigDir)
	}
	if !strings.Contains(content[CgroupV1DropInPath], "ExecStartPre=/"+CgroupV1ScriptPath+"\n") {
		t.Errorf("drop-in does not run the cgroup script:\n%s", content[CgroupV1DropInPath])
	}
	if !strings.Contains(content[CgroupfsDropInPath], "[Service]\nExecStartPre=/"+CgroupfsScriptPath+"\n") {
		t.Errorf("containerd drop-in does not run the cgroupfs script:\n%s", content[CgroupfsDropInPath])
	}
}

func TestAddTOMLTable(t *testing.T) {
	got, err := AddTOMLTable([]byte("[a]\n  x = 1"), "a.b", "y", `"z"`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[a]\n  x = 1\n\n[a.b]\n  y = \"z\"\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := AddTOMLTable([]byte("[a]\n[ a.b ] # set\n  y = 2\n"), "a.b", "y", "3"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a table already there: got %v, want an error naming line 2", err)
	}
}

func TestBaseFilesNotKind(t *testing.T) {
	if _, err := BaseFiles(t.TempDir()); err == nil {
		t.Error("an empty directory was taken for kind's files")
	}
}

func TestSetupScript(t *testing.T) {
	debian, err := SetupScript(RuntimeFromDebian)
	if err != nil {
		t.Fatal(err)
	}
	modules, err := SetupScript(RuntimeFromModules)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"debian": debian, "modules": modules} {
		for _, want := range []string{"systemctl enable kubelet.service containerd.service", "ctr oci spec", "runc --version", "systemctl mask ldconfig.service"} {
			if !strings.Contains(s, want) {
				t.Errorf("%s script lacks %q", name, want)
			}
		}
	}
	if !strings.Contains(debian, "ln -sf /usr/sbin/runc /usr/local/sbin/runc") {
		t.Error("the debian script does not link Debian's runc")
	}
	if strings.Contains(modules, "ln -sf /usr/") {
		t.Error("the modules script links Debian's binaries over the built ones")
	}
	for _, p := range CNIPlugins {
		if bin := "/opt/cni/bin/" + filepath.Base(p); !strings.Contains(modules, bin) {
			t.Errorf("the modules script does not check %s", bin)
		}
	}
	if _, err := SetupScript("nix"); err == nil || !strings.Contains(err.Error(), `"nix"`) {
		t.Errorf("SetupScript(nix) = %v, want an error naming the source", err)
	}
}

func TestBuildRuntimeBadInput(t *testing.T) {
	for _, tc := range []struct{ name, drop, want string }{
		{"containerd", plan.InputContainerd, "containerd:"},
		{"runc", plan.InputRunc, "runc:"},
		{"plugins", plan.InputCNIPlugins, "CNI plugins:"},
	} {
		inputs := map[string]string{
			"containerd":  "github.com/containerd/containerd/v2@v2.3.4",
			"runc":        "github.com/opencontainers/runc@v1.4.3",
			"cni-plugins": "github.com/containernetworking/plugins@v1.9.1",
		}
		inputs[tc.drop] = "github.com/x/y"
		_, err := runtimeBuilds(plan.Step{Inputs: inputs})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "module@version") {
			t.Errorf("%s: err = %v, want one naming %q and module@version", tc.name, err, tc.want)
		}
	}
}

// TestCgroupfsScript runs the script with sh against a fake cgroup root,
// a copy of kind's containerd config and a fake containerd on PATH.
func TestCgroupfsScript(t *testing.T) {
	kindConfig := `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    # use systemd cgroup by default
    SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler.options]
    SystemdCgroup = true
`
	for name, tc := range map[string]struct {
		cgroupV2 bool
		version  string // what containerd --version prints
		want     string // SystemdCgroup's value in both runtimes afterwards
		stderr   string
	}{
		"v1 host, containerd 2":   {version: "containerd github.com/containerd/containerd/v2 v2.3.4 abc", want: "false", stderr: "runc uses the cgroupfs driver"},
		"v2 host":                 {cgroupV2: true, version: "containerd github.com/containerd/containerd/v2 v2.3.4 abc", want: "true"},
		"v1 host, Debian's 1.7":   {version: "containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6", want: "true", stderr: "keeping systemd"},
		"v1 host, odd version":    {version: "containerd", want: "true", stderr: "cannot read containerd's version"},
		"v1 host, containerd v10": {version: "containerd github.com/containerd/containerd/v10 v10.0.0 abc", want: "false"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			root, bin, config := filepath.Join(dir, "cgroup"), filepath.Join(dir, "bin"), filepath.Join(dir, "config.toml")
			for _, d := range []string{root, bin} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.cgroupV2 {
				if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fake := "#!/bin/sh\necho '" + tc.version + "'\n"
			if err := os.WriteFile(filepath.Join(bin, "containerd"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(config, []byte(kindConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", CgroupfsScript)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"),
				"CAPD_E2E_CGROUP_ROOT="+root, "CAPD_E2E_CONTAINERD_CONFIG="+config)
			if err := cmd.Run(); err != nil {
				t.Fatalf("script: %v\n%s", err, stderr.String())
			}
			got, err := os.ReadFile(config)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(kindConfig, "SystemdCgroup = true", "SystemdCgroup = "+tc.want)
			if string(got) != want {
				t.Errorf("config:\n%s\nwant:\n%s", got, want)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.stderr)
			}
		})
	}
}
