package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// DefaultGOPROXY is the go command's default GOPROXY, used when neither
// Options.GOPROXY nor the environment sets one.
const DefaultGOPROXY = "https://proxy.golang.org,direct"

// maxList bounds the size of a version list read from a proxy.
const maxList = 4 << 20

// proxy is one entry of a GOPROXY list.
type proxy struct {
	// url is a proxy's base URL without a trailing "/", or "direct" or
	// "off".
	url string
	// anyError is true when the entry is followed by '|': the next entry
	// is tried whatever the error. After ',' (or nothing) only a "not
	// found" answer (404 or 410) falls through, as with the go command.
	anyError bool
}

func (p proxy) usable() bool { return p.url != "direct" && p.url != "off" }

// parseGOPROXY splits a GOPROXY list as the go command does: entries
// separated by ',' or '|'; "direct" and "off" end the list; an entry
// without a scheme that looks like a host gets "https://".
func parseGOPROXY(list string) ([]proxy, error) {
	var out []proxy
	for rest := list; rest != ""; {
		entry, anyError := rest, false
		if i := strings.IndexAny(rest, ",|"); i >= 0 {
			entry, anyError, rest = rest[:i], rest[i] == '|', rest[i+1:]
		} else {
			rest = ""
		}
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if entry == "direct" || entry == "off" {
			out = append(out, proxy{url: entry})
			break // the go command ignores what follows
		}
		if strings.ContainsAny(entry, ".:/") && !strings.Contains(entry, ":/") && !filepath.IsAbs(entry) && !path.IsAbs(entry) {
			entry = "https://" + entry
		}
		u, err := url.Parse(entry)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("GOPROXY=%q: entry %q is not an http(s) proxy URL, direct or off (versions are listed over http(s) only)", list, entry)
		}
		out = append(out, proxy{url: strings.TrimSuffix(entry, "/"), anyError: anyError})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("GOPROXY=%q lists no proxy", list)
	}
	return out, nil
}

// lister lists a module's versions through a GOPROXY list.
type lister struct {
	client  *http.Client
	timeout time.Duration
	goproxy string
	proxies []proxy
}

// listing is what listing one module path gave.
type listing struct {
	versions []string
	// from is the proxy that answered.
	from string
	err  error
}

// listError is a failed listing; notFound when every proxy tried answered
// 404 or 410 (the module, or this major version of it, does not exist).
type listError struct {
	msg      string
	notFound bool
}

func (e *listError) Error() string { return e.msg }

// list lists modPath's versions from the first proxy that has it.
func (l *lister) list(ctx context.Context, modPath string) listing {
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return listing{err: err}
	}
	var failed []string
	notFound := true
	for _, p := range l.proxies {
		if !p.usable() {
			if len(failed) == 0 {
				return listing{err: fmt.Errorf("GOPROXY=%q: %s cannot list versions, only a module proxy can: set GOPROXY to one, e.g. https://proxy.golang.org", l.goproxy, p.url)}
			}
			break // what the proxies before it said is the answer
		}
		versions, err := l.get(ctx, p.url+"/"+escaped+"/@v/list")
		if err == nil {
			return listing{versions: versions, from: p.url}
		}
		failed = append(failed, fmt.Sprintf("GOPROXY %s: %v", p.url, err))
		var se *statusError
		isNotFound := errors.As(err, &se) && se.notFound()
		notFound = notFound && isNotFound
		if !p.anyError && !isNotFound {
			break
		}
	}
	return listing{err: &listError{msg: strings.Join(failed, "; "), notFound: notFound}}
}

// get fetches a version list: one version per line, each line's first
// field (the go command's reading).
func (l *lister) get(ctx context.Context, u string) ([]string, error) {
	reqCtx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, withTimeout(ctx, err, l.timeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxList+1))
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{code: resp.StatusCode, status: resp.Status, body: body}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the version list: %w", withTimeout(ctx, err, l.timeout))
	}
	if len(body) > maxList {
		return nil, fmt.Errorf("the version list is longer than %d bytes", maxList)
	}
	var versions []string
	for line := range strings.Lines(string(body)) {
		if f := strings.Fields(line); len(f) > 0 {
			versions = append(versions, f[0])
		}
	}
	return versions, nil
}

// listPaths are the module paths whose lists hold m's series: the marker's
// module, and for a series v2 and up of a module path without a major
// version suffix also <path>/v<major>, as upstream lists a module's
// major versions.
func listPaths(m config.ReleaseMarker) []string {
	paths := []string{m.Module}
	if _, pathMajor, _ := module.SplitPathVersion(m.Module); pathMajor == "" {
		if major := semver.Major(m.Series); major != "v0" && major != "v1" {
			paths = append(paths, m.Module+"/"+major)
		}
	}
	return paths
}

// pick resolves m from the listings of its listPaths: the highest version
// of its series, stable only unless m is a latest- marker. It returns the
// proxy that listed it.
func pick(m config.ReleaseMarker, listings []listing) (version, from string, err error) {
	var all []string
	var froms, failed []string
	for _, l := range listings {
		var le *listError
		switch {
		case l.err == nil:
			all = append(all, l.versions...)
			froms = append(froms, l.from)
		case len(listings) > 1 && errors.As(l.err, &le) && le.notFound:
			failed = append(failed, l.err.Error()) // another major version may hold it
		default:
			return "", "", l.err
		}
	}
	if len(froms) == 0 {
		return "", "", errors.New(strings.Join(failed, "; "))
	}
	from = strings.Join(slices.Compact(froms), ", ")
	var series, pre []string
	for _, v := range all {
		if !semver.IsValid(v) {
			continue // a tag that is no version: upstream ignores it too
		}
		series = append(series, semver.MajorMinor(v))
		if semver.MajorMinor(v) != m.Series {
			continue
		}
		if semver.Prerelease(v) != "" && !m.Prereleases {
			pre = append(pre, v)
			continue
		}
		if version == "" || semver.Compare(v, version) > 0 {
			version = v
		}
	}
	if version != "" {
		return version, from, nil
	}
	kind := "stable release"
	if m.Prereleases {
		kind = "release or pre-release"
	}
	msg := fmt.Sprintf("no %s of %s among the %d versions of %s that GOPROXY %s lists", kind, m.Series, len(series), m.Module, from)
	if len(series) > 0 {
		semver.Sort(series)
		msg += " (series " + strings.Join(slices.Compact(series), ", ") + ")"
	}
	if len(pre) > 0 {
		semver.Sort(pre)
		msg += fmt.Sprintf("; pre-releases %s exist: {go://%s@latest-%s} includes them", strings.Join(pre, ", "), m.Module, m.Series)
	}
	return "", "", errors.New(msg)
}
