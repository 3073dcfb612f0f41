package summary

import (
	"fmt"
	"strings"
)

// negativeConditions are Cluster API's v1beta2 condition types that say
// something is under way or wrong when True.
var negativeConditions = map[string]bool{
	"Deleting":    true,
	"Paused":      true,
	"Remediating": true,
	"RollingOut":  true,
	"ScalingDown": true,
	"ScalingUp":   true,
	"Updating":    true,
}

// Healthy reports whether the condition says all is well: True for most of
// Cluster API's conditions, False for those that report work under way or a
// problem (Deleting, Paused, Remediating, RollingOut, ScalingUp,
// ScalingDown, Updating). Unknown is never healthy.
func (c Condition) Healthy() bool {
	if negativeConditions[c.Type] {
		return c.Status == "False"
	}
	return c.Status == "True"
}

// UnhealthyCondition is a condition of an object that is not Healthy.
type UnhealthyCondition struct {
	Kind, Namespace, Name string
	Condition
}

// UnhealthyConditions returns the conditions of the summary's objects that
// are not healthy, in the objects' order.
func (s Summary) UnhealthyConditions() []UnhealthyCondition {
	var out []UnhealthyCondition
	for _, o := range s.Objects {
		for _, c := range o.Conditions {
			if !c.Healthy() {
				out = append(out, UnhealthyCondition{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Condition: c})
			}
		}
	}
	return out
}

// UnhealthyMachines returns the names of the Machines whose Ready
// condition is not True, or that have none.
func (s Summary) UnhealthyMachines() []string {
	var out []string
	for _, o := range s.Objects {
		if o.Kind != "Machine" {
			continue
		}
		ready := false
		for _, c := range o.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				ready = true
			}
		}
		if !ready {
			out = append(out, o.Name)
		}
	}
	return out
}

// NotRunning returns the snapshot's containers that are not running.
func (s Summary) NotRunning() []Container {
	if s.Snapshot == nil {
		return nil
	}
	var out []Container
	for _, c := range s.Snapshot.Containers {
		if !c.Running() {
			out = append(out, c)
		}
	}
	return out
}

// AbortedMessage is the error of a phase that a failure elsewhere ended
// (a Gomega assertion, a timeout): the summary's Failure says why.
const AbortedMessage = "did not complete (the spec failed or timed out here; see Failure)"

// Limits of FailureText, which goes into a JUnit failure that a person
// reads on one screen: the rest is in summary.txt.
const (
	maxConditionLines = 12
	maxMessage        = 240
	maxFailedTests    = 20
)

// FailedTestsAttribute is the attribute a spec sets to the tests it ran
// that failed, one per line, each with the start of its message (the
// conformance specs: Kubernetes' e2e tests): FailureText shows them
// right under the failing phase.
const FailedTestsAttribute = "failed tests"

// FailureText is what a person triaging a failed spec reads first, as
// plain text: the failing phase and its error, the tests that failed
// (FailedTestsAttribute), the cluster, its unhealthy
// conditions (reason and message), the machines and containers that are
// not running, then the artifacts to open (paths relative to the artifacts
// folder, as given: the caller lists those that exist). It is empty for a
// summary that did not fail.
func (s Summary) FailureText(artifacts []string) string {
	if s.Failure == nil {
		return ""
	}
	var b strings.Builder
	phase := s.Failure.Phase
	if phase == "" {
		phase = "(outside any phase)"
	}
	fmt.Fprintf(&b, "%s failed in phase: %s", s.Spec, phase)
	for _, p := range s.Phases {
		if p.Name == s.Failure.Phase {
			fmt.Fprintf(&b, " (%s after %s)", p.Result, round(p.Duration))
			if p.Error != "" && p.Error != AbortedMessage {
				fmt.Fprintf(&b, "\n  %s", clip(oneLine(p.Error), 2*maxMessage))
			}
			break
		}
	}
	b.WriteString("\n")
	if ft := strings.TrimSpace(s.Attribute(FailedTestsAttribute)); ft != "" {
		lines := strings.Split(ft, "\n")
		fmt.Fprintf(&b, "failed tests (%d):\n", len(lines))
		for i, l := range lines {
			if i == maxFailedTests {
				fmt.Fprintf(&b, "  (%d more in summary.txt)\n", len(lines)-i)
				break
			}
			fmt.Fprintf(&b, "  %s\n", clip(l, 2*maxMessage))
		}
	}
	if cluster := s.Attribute("cluster"); cluster != "" {
		fmt.Fprintf(&b, "cluster: %s", cluster)
		if ns := s.Attribute("namespace"); ns != "" {
			fmt.Fprintf(&b, " in namespace %s", ns)
		}
		b.WriteString("\n")
	}
	if u := s.UnhealthyConditions(); len(u) > 0 {
		b.WriteString("unhealthy conditions:\n")
		for i, c := range u {
			if i == maxConditionLines {
				fmt.Fprintf(&b, "  (%d more in summary.txt)\n", len(u)-i)
				break
			}
			fmt.Fprintf(&b, "  %s %s: %s=%s", c.Kind, c.Name, c.Type, c.Status)
			if c.Reason != "" {
				fmt.Fprintf(&b, " (%s)", c.Reason)
			}
			if c.Message != "" {
				fmt.Fprintf(&b, ": %s", clip(oneLine(c.Message), maxMessage))
			}
			b.WriteString("\n")
		}
	} else if len(s.Objects) > 0 {
		fmt.Fprintf(&b, "conditions: all healthy on %d objects\n", len(s.Objects))
	} else if s.Attribute("cluster") != "" {
		b.WriteString("conditions: not recorded (the Cluster did not exist or the management cluster did not answer)\n")
	}
	if m := s.UnhealthyMachines(); len(m) > 0 {
		fmt.Fprintf(&b, "machines not Ready: %s\n", strings.Join(m, ", "))
	}
	if nr := s.NotRunning(); len(nr) > 0 {
		b.WriteString("containers not running:\n")
		for _, c := range nr {
			fmt.Fprintf(&b, "  %s: %s", c.Name, c.State)
			if c.State == "exited" || c.State == "dead" {
				fmt.Fprintf(&b, ", exit code %d", c.ExitCode)
			}
			if c.OOMKilled {
				b.WriteString(", OOM killed")
			}
			if c.Error != "" {
				fmt.Fprintf(&b, ", %s", clip(oneLine(c.Error), maxMessage))
			}
			b.WriteString("\n")
		}
	} else if s.Snapshot != nil && len(s.Snapshot.Containers) > 0 {
		fmt.Fprintf(&b, "containers: all %d running\n", len(s.Snapshot.Containers))
	}
	if len(artifacts) > 0 {
		b.WriteString("artifacts:\n")
		for _, a := range artifacts {
			fmt.Fprintf(&b, "  %s\n", a)
		}
	}
	return b.String()
}

// Attribute returns the value of the attribute key, "" if unset.
func (s Summary) Attribute(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
