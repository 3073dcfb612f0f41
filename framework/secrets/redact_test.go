package secrets

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type redactCase struct {
	name string
	in   string // template: see material.expand
	// want lists the findings as "line:kind".
	want []string
	// out is the redacted text (a template); empty means in, unchanged.
	out string
	// format, when set, is checked to parse after redaction: "yaml" or
	// "json".
	format string
}

// positive cases: each kind, in each place it turns up in artifacts.
var positiveCases = []redactCase{
	{
		name: "bootstrap token in kubeadm output",
		in:   "[bootstrap-token] Using token: {{BT}}\n",
		want: []string{"1:bootstrap-token"},
		out:  "[bootstrap-token] Using token: REDACTED\n",
	},
	{
		name: "KubeadmConfig discovery token",
		in: `apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfig
spec:
  joinConfiguration:
    discovery:
      bootstrapToken:
        apiServerEndpoint: 172.18.0.3:6443
        caCertHashes:
        - {{HASH}}
        token: {{BT}}
        unsafeSkipCAVerification: false
`,
		want: []string{"10:bootstrap-token"},
		out: `apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfig
spec:
  joinConfiguration:
    discovery:
      bootstrapToken:
        apiServerEndpoint: 172.18.0.3:6443
        caCertHashes:
        - {{HASH}}
        token: REDACTED
        unsafeSkipCAVerification: false
`,
		format: "yaml",
	},
	{
		name: "kubeconfig user token, key and password",
		in: `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {{CERTB64}}
    server: https://127.0.0.1:6443
  name: c1
users:
- name: c1-admin
  user:
    client-certificate-data: {{CERTB64}}
    client-key-data: {{KEYB64}}
- name: c1-sa
  user:
    token: {{JWT}}
- name: c1-basic
  user:
    password: '{{S}}'
    username: admin
`,
		want: []string{"11:client-key-data", "14:kubeconfig-token", "17:password"},
		out: `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {{CERTB64}}
    server: https://127.0.0.1:6443
  name: c1
users:
- name: c1-admin
  user:
    client-certificate-data: {{CERTB64}}
    client-key-data: REDACTED
- name: c1-sa
  user:
    token: REDACTED
- name: c1-basic
  user:
    password: 'REDACTED'
    username: admin
`,
		format: "yaml",
	},
	{
		name: "token outside a kubeconfig user",
		in:   "status:\n  token: {{JWT}}\n",
		want: []string{"2:token"},
		out:  "status:\n  token: REDACTED\n",
	},
	{
		name: "RSA PEM block",
		in:   "before\n{{RSA}}\nafter\n",
		want: []string{"2:private-key"},
		out:  "before\n-----REDACTED PRIVATE KEY-----\nafter\n",
	},
	{
		// The END line, which had no newline, is dropped; the BEGIN line
		// keeps its own.
		name: "EC PEM block without final newline",
		in:   "{{EC}}",
		want: []string{"1:private-key"},
		out:  "-----REDACTED PRIVATE KEY-----\n",
	},
	{
		name: "PKCS8 and OpenSSH PEM blocks",
		in:   "{{PKCS8}}\n{{SSH}}\n",
		want: []string{"1:private-key", "6:private-key"},
		out:  "-----REDACTED PRIVATE KEY-----\n-----REDACTED PRIVATE KEY-----\n",
	},
	{
		name: "PEM in a YAML block scalar",
		in: `files:
- path: /etc/kubernetes/pki/sa.key
  content: |
    {{RSA4}}
  owner: root:root
  permissions: "0600"
`,
		want: []string{"4:private-key"},
		out: `files:
- path: /etc/kubernetes/pki/sa.key
  content: |
    -----REDACTED PRIVATE KEY-----
  owner: root:root
  permissions: "0600"
`,
		format: "yaml",
	},
	{
		name:   "PEM escaped in a JSON string",
		in:     `{"key": "{{RSAJSON}}", "n": 1}` + "\n",
		want:   []string{"1:private-key"},
		out:    `{"key": "-----REDACTED PRIVATE KEY-----", "n": 1}` + "\n",
		format: "json",
	},
	{
		name: "PEM in a journal, prefixed on every line",
		in:   "{{JOURNAL}}{{RSAJOURNAL}}\n{{JOURNAL}}done\nJan 02 15:04:06 c1-md-0 kubelet[9]: started\n",
		want: []string{"1:private-key"},
		out:  "{{JOURNAL}}-----REDACTED PRIVATE KEY-----\n{{JOURNAL}}done\nJan 02 15:04:06 c1-md-0 kubelet[9]: started\n",
	},
	{
		name: "base64 PEM private key anywhere",
		in:   "tls-key: {{KEYB64}}\n",
		want: []string{"1:private-key"},
		out:  "tls-key: REDACTED\n",
	},
	{
		name: "Secret in YAML, data before kind (as dumped)",
		in: `apiVersion: v1
data:
  tls.crt: {{CERTB64}}
  tls.key: {{KEYB64}}
kind: Secret
metadata:
  name: c1-ca
  namespace: default
type: kubernetes.io/tls
`,
		want: []string{"3:secret-data", "4:secret-data"},
		out: `apiVersion: v1
data:
  tls.crt: REDACTED
  tls.key: REDACTED
kind: Secret
metadata:
  name: c1-ca
  namespace: default
type: kubernetes.io/tls
`,
		format: "yaml",
	},
	{
		name: "Secret in YAML, kind first, stringData block scalar and next-line value",
		in: `kind: Secret
apiVersion: v1
stringData:
  config: |
    user: admin
    pass: {{S}}
  other:
    {{S2}}
  empty: ""
metadata:
  name: x
`,
		want: []string{"4:secret-data", "8:secret-data"},
		out: `kind: Secret
apiVersion: v1
stringData:
  config: REDACTED
  other:
    REDACTED
  empty: ""
metadata:
  name: x
`,
		format: "yaml",
	},
	{
		name: "Secret in pretty JSON, data before kind",
		in: `{
    "apiVersion": "v1",
    "data": {
        "password": "{{S}}",
        "username": "YWRtaW4="
    },
    "kind": "Secret",
    "metadata": {
        "name": "basic"
    }
}
`,
		want: []string{"4:secret-data", "5:secret-data"},
		out: `{
    "apiVersion": "v1",
    "data": {
        "password": "REDACTED",
        "username": "REDACTED"
    },
    "kind": "Secret",
    "metadata": {
        "name": "basic"
    }
}
`,
		format: "json",
	},
	{
		name: "Secret in YAML, data before kind, a PEM in a block scalar",
		in: `apiVersion: v1
stringData:
  note: hi
  tls.key: |
    {{RSA4}}
kind: Secret
`,
		want: []string{"3:secret-data", "4:secret-data"},
		out: `apiVersion: v1
stringData:
  note: REDACTED
  tls.key: REDACTED
kind: Secret
`,
		format: "yaml",
	},
	{
		name: "ConfigMap holding a PEM in a block scalar",
		in: `apiVersion: v1
data:
  tls.key: |
    {{RSA4}}
  note: hi
kind: ConfigMap
`,
		want: []string{"4:private-key"},
		out: `apiVersion: v1
data:
  tls.key: |
    -----REDACTED PRIVATE KEY-----
  note: hi
kind: ConfigMap
`,
		format: "yaml",
	},
	{
		name: "kubeconfig in pretty JSON",
		in: `{
    "users": [
        {
            "name": "c1-admin",
            "user": {
                "client-key-data": "{{KEYB64}}",
                "token": "{{JWT}}"
            }
        }
    ]
}
`,
		want: []string{"6:client-key-data", "7:kubeconfig-token"},
		out: `{
    "users": [
        {
            "name": "c1-admin",
            "user": {
                "client-key-data": "REDACTED",
                "token": "REDACTED"
            }
        }
    ]
}
`,
		format: "json",
	},
	{
		name: "List of a Secret and a ConfigMap",
		in: `apiVersion: v1
items:
- apiVersion: v1
  data:
    a: {{S}}
  kind: Secret
  metadata:
    name: s
- apiVersion: v1
  data:
    b: not-secret
  kind: ConfigMap
  metadata:
    name: c
kind: List
`,
		want: []string{"5:secret-data"},
		out: `apiVersion: v1
items:
- apiVersion: v1
  data:
    a: REDACTED
  kind: Secret
  metadata:
    name: s
- apiVersion: v1
  data:
    b: not-secret
  kind: ConfigMap
  metadata:
    name: c
kind: List
`,
		format: "yaml",
	},
	{
		name: "last-applied-configuration of a Secret",
		in: `metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","data":{"a":"{{S}}","b":"{{S2}}"},"kind":"Secret","metadata":{"name":"x"}}
`,
		want: []string{"4:secret-data", "4:secret-data"},
		out: `metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","data":{"a":"REDACTED","b":"REDACTED"},"kind":"Secret","metadata":{"name":"x"}}
`,
		format: "yaml",
	},
	{
		name:   "last-applied-configuration escaped in JSON",
		in:     `{"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"stringData\":{\"token\":\"{{S}}\"},\"kind\":\"Secret\"}\n"}` + "\n",
		want:   []string{"1:secret-data"},
		out:    `{"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"stringData\":{\"token\":\"REDACTED\"},\"kind\":\"Secret\"}\n"}` + "\n",
		format: "json",
	},
	{
		name: "kubeadm join in a machine log",
		in:   "{{JOURNAL}}kubeadm join 172.18.0.3:6443 --token {{BT}} \\\n{{JOURNAL}}  --discovery-token-ca-cert-hash {{HASH}}\n",
		want: []string{"1:bootstrap-token"},
		out:  "{{JOURNAL}}kubeadm join 172.18.0.3:6443 --token REDACTED \\\n{{JOURNAL}}  --discovery-token-ca-cert-hash {{HASH}}\n",
	},
	{
		name: "token flags of other forms",
		in:   "kubeadm join --discovery-token={{S}} --tls-bootstrap-token '{{S2}}' --control-plane --certificate-key {{HEX}}\n",
		want: []string{"1:token-flag", "1:token-flag", "1:certificate-key"},
		out:  "kubeadm join --discovery-token=REDACTED --tls-bootstrap-token 'REDACTED' --control-plane --certificate-key REDACTED\n",
	},
	{
		name:   "token flag in a JSON argument list",
		in:     `{"Path": "kubeadm", "Args": ["join", "--token", "{{S}}", "--v=5"]}` + "\n",
		want:   []string{"1:token-flag"},
		out:    `{"Path": "kubeadm", "Args": ["join", "--token", "REDACTED", "--v=5"]}` + "\n",
		format: "json",
	},
	{
		name: "token flag in a pretty-printed JSON argument list",
		in: `{
  "Cmd": [
    "kubeadm",
    "join",
    "--token",
    "{{S}}",
    "--v=5"
  ]
}
`,
		want: []string{"6:token-flag"},
		out: `{
  "Cmd": [
    "kubeadm",
    "join",
    "--token",
    "REDACTED",
    "--v=5"
  ]
}
`,
		format: "json",
	},
	{
		name: "token flag before a shell line continuation",
		in:   "kubeadm join 172.18.0.3:6443 --token \\\n    {{S}} \\\n    --discovery-token-ca-cert-hash {{HASH}}\n",
		want: []string{"2:token-flag"},
		out:  "kubeadm join 172.18.0.3:6443 --token \\\n    REDACTED \\\n    --discovery-token-ca-cert-hash {{HASH}}\n",
	},
	{
		name:   "token in a JSON log line",
		in:     `{"level":"info","msg":"got it","token":"{{JWT}}","client-secret":"{{S}}"}` + "\n",
		want:   []string{"1:token", "1:password"},
		out:    `{"level":"info","msg":"got it","token":"REDACTED","client-secret":"REDACTED"}` + "\n",
		format: "json",
	},
	{
		name:   "password as a JSON number",
		in:     `{"password": 12345678, "user": "a"}` + "\n",
		want:   []string{"1:password"},
		out:    `{"password": "REDACTED", "user": "a"}` + "\n",
		format: "json",
	},
	{
		name: "escaped JSON key",
		in:   `msg="{\"token\":\"{{S}}\"}"` + "\n",
		want: []string{"1:token"},
		out:  `msg="{\"token\":\"REDACTED\"}"` + "\n",
	},
	{
		name: "Authorization headers",
		in:   "Authorization: Bearer {{JWT}}\nheaders=map[Authorization:[Basic {{S}}]]\n",
		want: []string{"1:authorization", "2:authorization"},
		out:  "Authorization: Bearer REDACTED\nheaders=map[Authorization:[Basic REDACTED]]\n",
	},
	{
		name: "URL with a password",
		in:   "pulling https://admin:{{S}}@registry.local/v2/ now\n",
		want: []string{"1:password"},
		out:  "pulling https://admin:REDACTED@registry.local/v2/ now\n",
	},
	{
		name:   "token block scalar",
		in:     "token: |\n  {{S}}\n  {{S2}}\nother: x\n",
		want:   []string{"1:token"},
		out:    "token: REDACTED\nother: x\n",
		format: "yaml",
	},
	{
		name:   "token value on the next line",
		in:     "token:\n  {{S}}\nother: x\n",
		want:   []string{"2:token"},
		out:    "token:\n  REDACTED\nother: x\n",
		format: "yaml",
	},
	{
		name: "CRLF line endings are kept",
		in:   "token: {{S}}\r\nx: y\r\n",
		want: []string{"1:token"},
		out:  "token: REDACTED\r\nx: y\r\n",
	},
	{
		name:   "kubeadm certificateKey",
		in:     "controlPlane:\n  certificateKey: {{HEX}}\n",
		want:   []string{"2:certificate-key"},
		out:    "controlPlane:\n  certificateKey: REDACTED\n",
		format: "yaml",
	},
	{
		name: "plain YAML value with a comment",
		in:   "password: {{S}} # set by CI\n",
		want: []string{"1:password"},
		out:  "password: REDACTED # set by CI\n",
	},
}

// negativeCases are not secrets, and must come out byte for byte.
var negativeCases = []redactCase{
	{name: "certificate PEM", in: "{{CERT}}\n"},
	{name: "public key PEM (sa.pub)", in: "{{PUB}}\n"},
	{name: "certificate in a block scalar", in: "ca.crt: |\n    {{CERT4}}\nnext: 1\n", format: "yaml"},
	{name: "certificate data in a kubeconfig", in: "- cluster:\n    certificate-authority-data: {{CERTB64}}\n  user:\n    client-certificate-data: {{CERTB64}}\n", format: "yaml"},
	{name: "CA cert hash", in: "kubeadm join 172.18.0.3:6443 --discovery-token-ca-cert-hash {{HASH}} --discovery-token-unsafe-skip-ca-verification\n"},
	{name: "token-like key names", in: "bootstrapTokens:\n- ttl: 24h0m0s\n  tokenTTL: 15m\n  usages:\n  - signing\n  groups:\n  - system:bootstrappers:kubeadm:default-node-token\nautomountServiceAccountToken: true\n", format: "yaml"},
	{name: "empty and null tokens", in: "token: \"\"\npassword: ''\nid-token:\nrefresh-token: null\nclient-secret: ~\n", format: "yaml"},
	{name: "serviceAccountToken projection", in: "    sources:\n    - serviceAccountToken:\n        expirationSeconds: 3607\n        path: token\n    - configMap:\n        name: kube-root-ca.crt\n", format: "yaml"},
	{name: "CRD schema describing a token field", in: "            properties:\n              token:\n                description: Token is used for establishing bidirectional trust\n                  between nodes and control-planes. Used for joining nodes in the\n                  cluster.\n                type: string\n              ttl:\n                type: string\n", format: "yaml"},
	{name: "JSON schema describing a password field", in: `{"password": {"description": "the password", "type": "string"}, "token": null, "refresh_token": ""}` + "\n", format: "json"},
	{name: "placeholders", in: "token: REDACTED\npassword: ${PASSWORD}\nkubeadm join --token $TOKEN --certificate-key <key> --password '***'\nAuthorization: Bearer <masked>\nclient-key-data: REDACTED\n-----REDACTED PRIVATE KEY-----\n"},
	{name: "token that is a map in pretty JSON", in: "{\n  \"token\": {\n    \"type\": \"string\"\n  }\n}\n", format: "json"},
	{name: "dotted names and versions", in: "I0102 15:04:05.123456 kubelet.go:1234] node c1-md-0-abcde.example is ready; version v1.36.3; image registry.k8s.io/kube-proxy:v1.36.3; {{DIGITS}}\nfile {{BTLETTERS}} and {{BT}}g and x.{{BT}} and {{BT}}-x and -{{BT}}\n"},
	{name: "ConfigMap data", in: "apiVersion: v1\ndata:\n  key: {{S}}\nkind: ConfigMap\n", format: "yaml"},
	{name: "data section that ends without a kind", in: "spec:\n  data:\n    key: {{S}}\nstatus: {}\n", format: "yaml"},
	{name: "secret names and refs", in: "spec:\n  secretRef:\n    name: c1-kubeconfig\n  dataSecretName: c1-md-0-bootstrap\n  client-key: /etc/kubernetes/pki/apiserver-kubelet-client.key\n  tokenFile: /var/lib/token\n", format: "yaml"},
	{name: "container IDs and digests", in: "containerID: containerd://{{HEX}}\nimage: docker.io/library/x@sha256:{{HEX}}\nurl: https://172.18.0.3:6443/api?timeout=32s\n", format: "yaml"},
	{name: "token-ttl and token-file flags", in: "kubeadm token create --ttl 1h --token-ttl 2h --print-join-command\nkubectl --token-file=/x --kubeconfig=/y\n"},
	{name: "a Secret without data", in: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ntype: Opaque\n", format: "yaml"},
}

var (
	fingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{8}/[0-9]+$`)
)

func TestRedact(t *testing.T) {
	m := testMaterial(t)
	for _, tc := range append(slices.Clone(positiveCases), negativeCases...) {
		t.Run(tc.name, func(t *testing.T) {
			in := m.expand(tc.in)
			wantOut := in
			if tc.out != "" {
				wantOut = m.expand(tc.out)
			}

			got, fs := Redact([]byte(in))
			var kinds []string
			for _, f := range fs {
				kinds = append(kinds, fmt.Sprintf("%d:%s", f.Line, f.Kind))
				if !fingerprintRE.MatchString(f.Fingerprint) {
					t.Errorf("fingerprint %q is not of the documented form", f.Fingerprint)
				}
				if f.Path != "" {
					t.Errorf("Redact set Path %q", f.Path)
				}
			}
			if !slices.Equal(kinds, tc.want) {
				t.Errorf("findings = %v, want %v", kinds, tc.want)
			}
			if string(got) != wantOut {
				t.Errorf("output:\n%s\nwant:\n%s", got, wantOut)
			}
			if len(tc.want) > 0 {
				for _, s := range m.secrets() {
					if strings.Contains(in, s) && strings.Contains(string(got), s) {
						t.Errorf("output still holds a secret of %d bytes", len(s))
					}
				}
			}
			if scanned := Scan([]byte(in)); !slices.Equal(scanned, fs) {
				t.Errorf("Scan = %v, Redact found %v", scanned, fs)
			}
			if again := Scan(got); len(again) > 0 {
				t.Errorf("Scan after Redact found %v", again)
			}
			if twice, _ := Redact(got); string(twice) != string(got) {
				t.Errorf("Redact is not idempotent:\n%s", twice)
			}
			switch tc.format {
			case "yaml":
				var v any
				if err := yaml.Unmarshal(got, &v); err != nil {
					t.Errorf("output is not YAML: %v", err)
				}
			case "json":
				for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n{") {
					if !strings.HasPrefix(l, "{") {
						l = "{" + l
					}
					if !json.Valid([]byte(l)) {
						t.Errorf("output is not JSON: %s", l)
					}
				}
			}
		})
	}
}

func TestRedactBinary(t *testing.T) {
	m := testMaterial(t)
	in := []byte("\x00\x01" + m.expand("token: {{S}}\n"))
	got, fs := Redact(in)
	if len(fs) != 0 || &got[0] != &in[0] {
		t.Errorf("binary input: findings %v, output changed: %v", fs, &got[0] != &in[0])
	}
}

func TestRedactReturnsInputWhenClean(t *testing.T) {
	in := []byte("nothing: here\n")
	got, fs := Redact(in)
	if fs != nil || &got[0] != &in[0] {
		t.Errorf("Redact of clean input: findings %v, same slice %v", fs, &got[0] == &in[0])
	}
}

func TestFindingsDoNotHoldSecrets(t *testing.T) {
	m := testMaterial(t)
	var all strings.Builder
	for _, tc := range positiveCases {
		all.WriteString(m.expand(tc.in))
		all.WriteString("\n---\n")
	}
	fs := Scan([]byte(all.String()))
	if len(fs) == 0 {
		t.Fatal("no findings")
	}
	for _, f := range fs {
		text := f.String()
		for _, s := range m.secrets() {
			if strings.Contains(text, s) || strings.Contains(text, s[:8]) {
				t.Errorf("finding %q holds part of a secret", text)
			}
		}
	}
}

func TestLongLines(t *testing.T) {
	m := testMaterial(t)
	// A 3 MiB line of JSON members with a token near each cut.
	var b strings.Builder
	b.WriteString("{")
	n := 0
	for b.Len() < 3*maxLine {
		fmt.Fprintf(&b, `"k%d":"%s",`, n, strings.Repeat("x", 1000))
		if n%1000 == 0 {
			b.WriteString(`"token":"` + m.S + `",`)
		}
		n++
	}
	b.WriteString(`"end":1}` + "\nnext: line\n")
	in := b.String()
	got, fs := Redact([]byte(in))
	if strings.Contains(string(got), m.S) {
		t.Error("a token in a long line survived")
	}
	want := strings.Count(in, m.S)
	if len(fs) != want {
		t.Errorf("%d findings, want %d", len(fs), want)
	}
	for _, f := range fs {
		if f.Line != 1 {
			t.Errorf("finding on line %d, want 1", f.Line)
		}
	}
	if !strings.HasSuffix(string(got), "\"end\":1}\nnext: line\n") || !json.Valid([]byte(strings.SplitN(string(got), "\n", 2)[0])) {
		t.Error("long line not kept whole")
	}
}
