package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// fixtureFile is a file of the artifacts tree built by buildArtifacts.
type fixtureFile struct {
	content  string
	redacted string // what RedactTree must leave; content when it has no secret
	mode     fs.FileMode
	kinds    []Kind // the findings' kinds, in order
}

// buildArtifacts writes, under dir, an artifacts folder shaped like the
// E2E's, with secrets made now, and returns what each file holds and must
// hold after redaction.
func buildArtifacts(t *testing.T, dir string) map[string]fixtureFile {
	t.Helper()
	m := testMaterial(t)
	files := map[string]fixtureFile{}
	add := func(name, content, redacted string, mode fs.FileMode, kinds ...Kind) {
		if redacted == "" {
			redacted = content
		}
		files[name] = fixtureFile{content, redacted, mode, kinds}
	}

	// A KubeadmConfig dump, as upstream's DumpAllResources writes it.
	kc := `apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfig
metadata:
  labels:
    cluster.x-k8s.io/cluster-name: c1
  name: c1-md-0-x7k2p
  namespace: default
spec:
  joinConfiguration:
    discovery:
      bootstrapToken:
        apiServerEndpoint: 172.18.0.3:6443
        caCertHashes:
        - ` + m.Hash + `
        token: %s
    nodeRegistration:
      kubeletExtraArgs:
      - name: eviction-hard
        value: nodefs.available<0%%,imagefs.available<0%%
status:
  dataSecretName: c1-md-0-x7k2p
  initialization:
    dataSecretCreated: true
`
	add("clusters/bootstrap/resources/default/KubeadmConfig/c1-md-0-x7k2p.yaml",
		fmt.Sprintf(kc, m.BT), fmt.Sprintf(kc, Marker), 0o600, KindBootstrapToken)
	add("clusters/bootstrap/resources/default/KubeadmControlPlane/c1-control-plane.yaml", `apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata:
  name: c1-control-plane
  namespace: default
spec:
  kubeadmConfigSpec:
    clusterConfiguration:
      apiServer:
        certSANs:
        - localhost
    initConfiguration:
      bootstrapTokens:
      - ttl: 24h0m0s
        usages:
        - signing
        - authentication
  replicas: 1
  version: v1.36.3
`, "", 0o600)

	// A Secret dump: data comes before kind.
	sec := `apiVersion: v1
data:
  tls.crt: %s
  tls.key: %s
kind: Secret
metadata:
  name: c1-ca
  namespace: default
type: cluster.x-k8s.io/secret
`
	add("clusters/bootstrap/resources/default/Secret/c1-ca.yaml",
		fmt.Sprintf(sec, m.CertB64, m.KeyB64), fmt.Sprintf(sec, Marker, Marker), 0o644, KindSecretData, KindSecretData)

	// A kubeconfig written by client-go, kept world-readable by mistake.
	kcfg := clientcmdapi.NewConfig()
	kcfg.Clusters["c1"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:32768", CertificateAuthorityData: []byte(m.Cert + "\n")}
	kcfg.AuthInfos["c1-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(m.Cert + "\n"), ClientKeyData: []byte(m.RSA + "\n")}
	kcfg.AuthInfos["c1-sa"] = &clientcmdapi.AuthInfo{Token: m.JWT}
	kcfg.Contexts["c1"] = &clientcmdapi.Context{Cluster: "c1", AuthInfo: "c1-admin"}
	kcfg.CurrentContext = "c1"
	kb, err := clientcmd.Write(*kcfg)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := string(kb)
	keyData := base64.StdEncoding.EncodeToString([]byte(m.RSA + "\n"))
	if !strings.Contains(kubeconfig, keyData) || !strings.Contains(kubeconfig, m.JWT) {
		t.Fatalf("unexpected kubeconfig layout:\n%s", kubeconfig)
	}
	add("clusters/c1/kubeconfig", kubeconfig,
		strings.NewReplacer(keyData, Marker, m.JWT, Marker).Replace(kubeconfig), 0o644,
		KindClientKeyData, KindKubeconfigToken)

	// A machine's journal: thousands of lines, the join command deep in.
	var journal, journalRedacted strings.Builder
	for i := range 5000 {
		line := fmt.Sprintf("Jan 02 15:%02d:%02d.%06d c1-md-0-x7k2p kubelet[%d]: I0102 15:04:05.%06d    %d kubelet.go:%d] \"Syncing pod\" pod=\"kube-system/kube-proxy-%05d\" version=v1.36.3 node=c1-md-0-x7k2p.local\n",
			i/60%60, i%60, i, 800+i%7, i, 812, 2000+i%50, i)
		journal.WriteString(line)
		journalRedacted.WriteString(line)
		if i == 4321 {
			join := "Jan 02 16:00:00.000000 c1-md-0-x7k2p cloud-init[812]: kubeadm join 172.18.0.3:6443 --token %s --discovery-token-ca-cert-hash " + m.Hash + "\n"
			fmt.Fprintf(&journal, join, m.BT)
			fmt.Fprintf(&journalRedacted, join, Marker)
		}
	}
	add("clusters/c1/machines/c1-md-0-x7k2p/journal.log", journal.String(), journalRedacted.String(), 0o644, KindBootstrapToken)
	add("clusters/c1/machines/c1-md-0-x7k2p/kubelet.log", "I0102 15:04:05.000001    812 server.go:1] \"Started kubelet\"\nI0102 15:04:05.000002    812 kubelet.go:2] \"Attempting to register node\" node=\"c1-md-0-x7k2p\"\n", "", 0o644)

	// An inspect document whose command line holds a token, as json.MarshalIndent writes it.
	inspect := func(tok string) string {
		b, err := json.MarshalIndent([]map[string]any{{
			"Id":    m.Hex,
			"Name":  "/c1-md-0-x7k2p",
			"State": map[string]any{"Status": "running", "Pid": 1234},
			"Config": map[string]any{
				"Cmd":    []string{"kubeadm", "join", "--token", tok, "--discovery-token-ca-cert-hash", m.Hash},
				"Env":    []string{"container=docker", "PATH=/usr/local/sbin:/usr/bin"},
				"Labels": map[string]string{"io.x-k8s.kind.role": "worker"},
			},
			"HostConfig": map[string]any{"Privileged": true},
		}}, "", "    ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	add("clusters/c1/machines/c1-md-0-x7k2p/inspect.json", inspect(m.S), inspect(Marker), 0o644, KindTokenFlag)

	// kubeadm's service-account signing key pair.
	add("clusters/c1/machines/c1-control-plane-abc/pki/sa.key", m.RSA+"\n", PEMMarker+"\n", 0o600, KindPrivateKey)
	add("clusters/c1/machines/c1-control-plane-abc/pki/sa.pub", m.Pub+"\n", "", 0o644)
	add("clusters/c1/machines/c1-control-plane-abc/pki/ca.crt", m.Cert+"\n", "", 0o644)

	// The harness's own JSON, which holds nothing secret but looks close.
	add("summary.json", `{
  "specs": [{"name": "quick-start", "state": "passed", "duration": "5m3s"}],
  "config": {"tokenTTL": "15m", "automountServiceAccountToken": true, "serviceAccountToken": {"path": "token"}, "token": ""}
}
`, "", 0o644)
	add("containers.json", `{"Filter": "label=x", "Containers": [{"Name": "c1-lb", "Labels": {"io.x-k8s.kind.cluster": "c1"}}]}`+"\n", "", 0o644)

	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	return files
}

// fileState is what must not change on a file RedactTree leaves alone.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		state := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			state += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			state += " " + string(b)
		}
		out[filepath.ToSlash(rel)] = state
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScanAndRedactTree(t *testing.T) {
	m := testMaterial(t)
	root := t.TempDir()
	files := buildArtifacts(t, root)

	// What the walk must skip: a binary file holding a token, links in and
	// out of the tree, and a pipe (reading it would block).
	bin := append([]byte{0x1f, 0x8b, 0x08, 0x00}, []byte("token: "+m.S+"\n")...)
	if err := os.WriteFile(filepath.Join(root, "logs.tar.gz"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.yaml")
	outsideContent := "token: " + m.S2 + "\n"
	if err := os.WriteFile(outside, []byte(outsideContent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "clusters/c1/link-out.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("kubeconfig", filepath.Join(root, "clusters/c1/link-in")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(root, "clusters/dir-out")); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Scan.
	scan, err := ScanTree(root)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string][]Kind{}
	for _, f := range scan.Findings {
		byFile[f.Path] = append(byFile[f.Path], f.Kind)
		if s := f.String(); strings.Contains(s, m.BT) || strings.Contains(s, m.S) || strings.Contains(s, m.JWT) {
			t.Errorf("finding %q holds a secret", s)
		}
	}
	for name, f := range files {
		if !slices.Equal(byFile[name], f.kinds) {
			t.Errorf("%s: found %v, want %v", name, byFile[name], f.kinds)
		}
		delete(byFile, name)
	}
	if len(byFile) > 0 {
		t.Errorf("findings in unexpected files: %v", byFile)
	}
	if scan.Files != len(files) {
		t.Errorf("read %d files, want %d", scan.Files, len(files))
	}
	if !slices.Equal(scan.Binary, []string{"logs.tar.gz"}) {
		t.Errorf("binary = %v", scan.Binary)
	}
	wantSkipped := []string{"clusters/c1/link-in", "clusters/c1/link-out.yaml", "clusters/dir-out", "fifo"}
	if !slices.Equal(scan.Skipped, wantSkipped) {
		t.Errorf("skipped = %v, want %v", scan.Skipped, wantSkipped)
	}
	for _, f := range scan.Findings {
		if f.Path == "clusters/c1/machines/c1-md-0-x7k2p/journal.log" && f.Line != 4323 {
			t.Errorf("join line reported at line %d, want 4323", f.Line)
		}
	}

	// Exposed: files with secrets readable by others.
	var exposed []string
	for _, x := range scan.Exposed() {
		exposed = append(exposed, fmt.Sprintf("%s %v %v", x.Path, x.Mode, x.Kinds))
	}
	wantExposed := []string{
		"clusters/bootstrap/resources/default/Secret/c1-ca.yaml -rw-r--r-- [secret-data]",
		"clusters/c1/kubeconfig -rw-r--r-- [client-key-data kubeconfig-token]",
		"clusters/c1/machines/c1-md-0-x7k2p/inspect.json -rw-r--r-- [token-flag]",
		"clusters/c1/machines/c1-md-0-x7k2p/journal.log -rw-r--r-- [bootstrap-token]",
	}
	if !slices.Equal(exposed, wantExposed) {
		t.Errorf("exposed:\n%s\nwant:\n%s", strings.Join(exposed, "\n"), strings.Join(wantExposed, "\n"))
	}

	// Redact.
	before := snapshotTree(t, root)
	red, err := RedactTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(red.Findings, scan.Findings) {
		t.Errorf("RedactTree findings differ from ScanTree's:\n%v\n%v", red.Findings, scan.Findings)
	}
	var wantRedacted []string
	for name, f := range files {
		if len(f.kinds) > 0 {
			wantRedacted = append(wantRedacted, name)
		}
	}
	slices.Sort(wantRedacted)
	if !slices.Equal(red.Redacted, wantRedacted) {
		t.Errorf("redacted %v, want %v", red.Redacted, wantRedacted)
	}
	if len(red.Exposed()) != 0 {
		t.Errorf("RedactTree report lists exposed files: %v", red.Exposed())
	}
	after := snapshotTree(t, root)
	for name, f := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != f.redacted {
			t.Errorf("%s after redaction:\n%s\nwant:\n%s", name, got, f.redacted)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != f.mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), f.mode)
		}
		switch {
		case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, "kubeconfig"):
			var v any
			if err := yaml.Unmarshal(got, &v); err != nil {
				t.Errorf("%s is no longer YAML: %v", name, err)
			}
		case strings.HasSuffix(name, ".json"):
			if !json.Valid(got) {
				t.Errorf("%s is no longer JSON", name)
			}
		}
		if len(f.kinds) == 0 && before[name] != after[name] {
			t.Errorf("%s changed though it holds no secret", name)
		}
	}
	// Everything that is not a file with secrets is as it was: links,
	// their targets, the binary file, the pipe, no temporary files left.
	for name, state := range after {
		if _, ok := files[name]; ok {
			continue
		}
		if before[name] != state {
			t.Errorf("%s changed", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d entries after, %d before", len(after), len(before))
	}
	if b, _ := os.ReadFile(outside); string(b) != outsideContent {
		t.Error("the file outside the tree changed")
	}

	// The redacted kubeconfig still loads.
	cfg, err := clientcmd.LoadFromFile(filepath.Join(root, "clusters/c1/kubeconfig"))
	if err != nil {
		t.Fatalf("redacted kubeconfig does not load: %v", err)
	}
	if cfg.AuthInfos["c1-sa"].Token != Marker || !bytes.Equal(cfg.AuthInfos["c1-admin"].ClientCertificateData, []byte(m.Cert+"\n")) {
		t.Error("redacted kubeconfig lost its certificate or kept its token")
	}

	// Nothing left to find.
	again, err := ScanTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Findings) != 0 {
		t.Errorf("second scan found %v", again.Findings)
	}
}

func TestScanTreeOfOneFile(t *testing.T) {
	m := testMaterial(t)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte("users:\n- user:\n    token: "+m.JWT+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	exposed, err := FindExposed(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(exposed) != 1 || exposed[0].Path != "kubeconfig" || exposed[0].Mode != 0o640 {
		t.Fatalf("FindExposed = %+v", exposed)
	}
	if _, err := RedactTree(p); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "users:\n- user:\n    token: REDACTED\n" {
		t.Errorf("redacted file:\n%s", b)
	}
	if exposed, err := FindExposed(p); err != nil || len(exposed) != 0 {
		t.Errorf("after redaction: %v, %v", exposed, err)
	}
}

func TestTreeErrorsAreCollected(t *testing.T) {
	m := testMaterial(t)
	root := t.TempDir()
	for _, name := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("token: "+m.S+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Tests may run as root, who reads a file of mode 0, so make the open
	// fail instead.
	openFile = func(r *os.Root, name string) (*os.File, error) {
		if name == "a.yaml" {
			return nil, fs.ErrPermission
		}
		return r.Open(name)
	}
	t.Cleanup(func() { openFile = (*os.Root).Open })
	rep, err := RedactTree(root)
	if err == nil || !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("error = %v, want one naming a.yaml", err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Path != "b.yaml" {
		t.Errorf("findings = %v, want b.yaml's", rep.Findings)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.yaml")); string(b) != "token: REDACTED\n" {
		t.Errorf("b.yaml was not redacted after a.yaml failed:\n%s", b)
	}
}

func TestScanTreeMissingRoot(t *testing.T) {
	if _, err := ScanTree(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("no error for a missing root")
	}
}
