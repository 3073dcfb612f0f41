package bench

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/shlex"
)

// GoBuild is a build the image factory ran, as its log records it
// (factory/gobuild writes "# in DIR", "# env K=V ..." and "# go build ..."
// at the top of each log).
type GoBuild struct {
	Dir  string
	Env  []string // the settings logged (CGO_ENABLED, GOOS, GOFLAGS, GOGC, ...)
	Args []string // the go command and its arguments
}

// ReadGoBuild reads the newest build log under dir/logs of one of the
// factory's Go build modules: the newest log holding a "go build" (or "go
// test -c") line, past the module downloads' logs ("go list").
func ReadGoBuild(dir string) (GoBuild, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	if err != nil || len(logs) == 0 {
		return GoBuild{}, fmt.Errorf("%s has no build log (logs/*.log): run make images first", dir)
	}
	mtime := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.ModTime().UnixNano()
	}
	slices.SortStableFunc(logs, func(a, b string) int { return cmp.Compare(mtime(b), mtime(a)) })
	var errs []error
	for _, l := range logs {
		g, err := readGoBuildLog(dir, l)
		if err == nil {
			return g, nil
		}
		errs = append(errs, err)
	}
	return GoBuild{}, errors.Join(errs...)
}

func readGoBuildLog(dir, log string) (GoBuild, error) {
	f, err := os.Open(log)
	if err != nil {
		return GoBuild{}, err
	}
	defer f.Close()
	g := GoBuild{Dir: dir}
	sc := bufio.NewScanner(f)
	for sc.Scan() && (g.Env == nil || g.Args == nil) {
		line, ok := strings.CutPrefix(sc.Text(), "# ")
		if !ok {
			break
		}
		switch {
		case strings.HasPrefix(line, "env "):
			if g.Env, err = shlex.Split(strings.TrimPrefix(line, "env ")); err != nil {
				return GoBuild{}, fmt.Errorf("%s: env line: %w", log, err)
			}
			if g.Env == nil {
				g.Env = []string{}
			}
		case strings.Contains(line, " build ") || strings.Contains(line, " test -c "):
			if g.Args, err = shlex.Split(line); err != nil {
				return GoBuild{}, fmt.Errorf("%s: build line: %w", log, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return GoBuild{}, err
	}
	if g.Env == nil || g.Args == nil {
		return GoBuild{}, fmt.Errorf("%s has no '# env' and '# go build' lines (a download's log, or one from before them: build again with make images)", log)
	}
	return g, nil
}

// Output returns the -o value of the build.
func (g GoBuild) Output() string {
	for i, a := range g.Args {
		if a == "-o" && i+1 < len(g.Args) {
			return g.Args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "-o="); ok {
			return v
		}
	}
	return ""
}

// WithOutput returns the build writing into dir (a folder, as the factory
// builds several commands at once; a single file keeps its base name).
func (g GoBuild) WithOutput(dir string) GoBuild {
	out := slices.Clone(g.Args)
	for i, a := range out {
		switch {
		case a == "-o" && i+1 < len(out):
			out[i+1] = outputIn(dir, out[i+1])
		case strings.HasPrefix(a, "-o="):
			out[i] = "-o=" + outputIn(dir, strings.TrimPrefix(a, "-o="))
		}
	}
	g.Args = out
	return g
}

// outputIn moves an output into dir: a folder's ("out/") becomes dir's, a
// file keeps its base name.
func outputIn(dir, o string) string {
	if strings.HasSuffix(o, "/") {
		return dir + "/"
	}
	return filepath.Join(dir, filepath.Base(o))
}

// Without drops a flag with its value, in either spelling ("-f=v" or
// "-f v"), where value matches (any value when empty).
func (g GoBuild) Without(flag, value string) GoBuild {
	var out []string
	for i := 0; i < len(g.Args); i++ {
		a := g.Args[i]
		if v, ok := strings.CutPrefix(a, flag+"="); ok && (value == "" || v == value) {
			continue
		}
		if a == flag && i+1 < len(g.Args) && (value == "" || g.Args[i+1] == value) {
			i++
			continue
		}
		out = append(out, a)
	}
	g.Args = out
	return g
}

// With adds flags right after "build".
func (g GoBuild) With(flags ...string) GoBuild {
	i := slices.Index(g.Args, "build")
	if i < 0 {
		return g
	}
	g.Args = slices.Concat(g.Args[:i+1], flags, g.Args[i+1:])
	return g
}

// EnvWithout returns the logged settings without key's.
func (g GoBuild) EnvWithout(key string) []string {
	return slices.DeleteFunc(slices.Clone(g.Env), func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
}
