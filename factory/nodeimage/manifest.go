package nodeimage

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var kubeletExtraArgs = regexp.MustCompile(`(?m)^KUBELET_EXTRA_ARGS=(.*)$`)

// AddKubeletArgs adds flags to KUBELET_EXTRA_ARGS in the content of
// /etc/default/kubelet (an environment file kubelet's systemd unit reads),
// adding the variable when it is missing. A flag whose name is set already
// is replaced. Values must not need quoting.
func AddKubeletArgs(env []byte, flags ...string) ([]byte, error) {
	for _, f := range flags {
		if !strings.HasPrefix(f, "--") || strings.ContainsAny(f, " \t\"'\n") {
			return nil, fmt.Errorf("add kubelet flag %q: want --name[=value] without spaces or quotes", f)
		}
	}
	flagName := func(f string) string { n, _, _ := strings.Cut(f, "="); return n }
	merge := func(existing string) string {
		var out []string
		for _, old := range strings.Fields(strings.Trim(existing, `"'`)) {
			keep := true
			for _, f := range flags {
				if flagName(old) == flagName(f) {
					keep = false
				}
			}
			if keep {
				out = append(out, old)
			}
		}
		return "KUBELET_EXTRA_ARGS=" + strings.Join(append(out, flags...), " ")
	}
	s := string(env)
	switch m := kubeletExtraArgs.FindAllStringSubmatchIndex(s, -1); len(m) {
	case 0:
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return []byte(s + merge("") + "\n"), nil
	case 1:
		out := s[:m[0][0]] + merge(s[m[0][2]:m[0][3]]) + s[m[0][1]:]
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		return []byte(out), nil
	default:
		return nil, errors.New("add kubelet flags: KUBELET_EXTRA_ARGS is set more than once")
	}
}
