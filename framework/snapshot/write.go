package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

const (
	// TableFile is the name of the human-readable table Save writes.
	TableFile = "containers.txt"
	// JSONFile is the name of the JSON document Save writes: the Snapshot
	// itself.
	JSONFile = "containers.json"
)

// Save writes the snapshot into dir, creating it if needed, as TableFile
// and JSONFile. (It is not called WriteTo so as not to be mistaken for
// io.WriterTo.)
func (s Snapshot) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, TableFile), table.Bytes(), 0o644); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("save snapshot: encode: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	return nil
}

// WriteTable writes the snapshot for a person: a one-line-per-container
// table (name, role, state, exit code, OOM kill, restarts, how long it has
// been up or down, image, addresses, published ports), then each container's
// engine error, start and finish times and labels, then what could not be
// inspected. Times in the table are relative to TakenAt.
func (s Snapshot) WriteTable(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Containers of %s at %s: %d\n\n", s.Filter, s.TakenAt.UTC().Format(time.RFC3339), len(s.Containers))

	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tSTATE\tEXIT\tOOM\tRESTARTS\tSINCE\tIMAGE\tADDRESSES\tPORTS")
	for _, c := range s.Containers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
			c.Name, dash(c.Role), dash(c.State), exitCode(c), yesDash(c.OOMKilled), c.Restarts,
			since(c, s.TakenAt), c.Image, dash(addresses(c)), dash(ports(c)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	for _, c := range s.Containers {
		fmt.Fprintf(&b, "\n%s (%s)\n", c.Name, shortID(c.ID))
		if c.Error != "" {
			fmt.Fprintf(&b, "  error:    %s\n", c.Error)
		}
		fmt.Fprintf(&b, "  created:  %s\n", stamp(c.Created))
		fmt.Fprintf(&b, "  started:  %s\n", stamp(c.StartedAt))
		if !c.Running {
			fmt.Fprintf(&b, "  finished: %s\n", stamp(c.FinishedAt))
		}
		if len(c.Labels) > 0 {
			b.WriteString("  labels:\n")
			for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
				fmt.Fprintf(&b, "    %s=%s\n", k, c.Labels[k])
			}
		}
	}

	if len(s.Errors) > 0 {
		b.WriteString("\nNot inspected:\n")
		for _, e := range s.Errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesDash(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}

// exitCode is blank for a container that has not exited, since the engine
// reports 0 for those too.
func exitCode(c Container) string {
	if c.Running || c.FinishedAt.IsZero() {
		return "-"
	}
	return strconv.Itoa(c.ExitCode)
}

func since(c Container, at time.Time) string {
	switch {
	case c.Running && !c.StartedAt.IsZero():
		return "up " + age(at.Sub(c.StartedAt))
	case !c.FinishedAt.IsZero():
		return "down " + age(at.Sub(c.FinishedAt))
	case c.StartedAt.IsZero():
		return "never started"
	}
	return "-"
}

// age rounds a duration to what a person needs: seconds under an hour,
// minutes beyond.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

func addresses(c Container) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(c.Networks)) {
		ep := c.Networks[n]
		ips := slices.DeleteFunc([]string{ep.IPv4, ep.IPv6}, func(s string) bool { return s == "" })
		if len(ips) == 0 {
			ips = []string{"no address"}
		}
		parts = append(parts, n+"="+strings.Join(ips, ","))
	}
	return strings.Join(parts, " ")
}

func ports(c Container) string {
	var parts []string
	for _, p := range c.Ports {
		s := fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)
		if p.HostPort != 0 {
			host := p.HostIP
			if strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
			s += fmt.Sprintf("->%s:%d", host, p.HostPort)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
