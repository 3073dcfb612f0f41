package cni

import (
	"strings"
	"testing"
)

func TestRewriteKubeRouterManifestUnbracesShellVariables(t *testing.T) {
	in := "        image: cloudnativelabs/kube-router\n        imagePullPolicy: Always\n        - --run-router=true\n" +
		"          cp /a ${TMP};\n          mv ${TMP} /b;\n          echo ${TMP}x ${A_1}\n"
	out, err := RewriteKubeRouterManifest([]byte(in), "cloudnativelabs/kube-router:v2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{"cp /a $TMP;", "mv $TMP /b;", "${TMP}x", "$A_1\n", "imagePullPolicy: IfNotPresent"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
