package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/report"
	"github.com/capd-e2e/capd-e2e/framework/summary"
)

// registerReport registers the suite's ReportAfterSuite: the JUnit report
// with each failure's text first, metadata.json and report.html
// (framework/report), in the artifacts folder.
func (s *Suite) registerReport() {
	ReportAfterSuite("capd-e2e reports", func(rep Report) {
		// PreviewSpecs (Run's look at what will run) reports too, as a dry
		// run: a report of nothing run, which must not stand in the
		// artifacts for a run that is then killed.
		if rep.SuiteConfig.DryRun {
			return
		}
		// The suite's reports are done (or failed, and said so): its
		// watcher has nothing to do.
		defer func() {
			if err := s.watcher.done(); err != nil {
				fmt.Fprintf(os.Stderr, "capd-e2e: telling the suite's watcher the suite is done: %v\n", err)
			}
		}()
		if s.JUnitReport == "" {
			return
		}
		in := report.Input{
			Report:         rep,
			ArtifactFolder: s.ArtifactFolder,
			RunID:          os.Getenv(EnvRunID),
			JUnitFile:      s.JUnitReport,
		}
		if s.env != nil {
			in.RunID = s.env.RunID
			in.Versions = versions(s.env)
		}
		if err := report.Write(in); err != nil {
			// Also where a person sees it when the artifacts are lost.
			fmt.Fprintf(os.Stderr, "capd-e2e: the run's reports: %v\n", err)
			Fail(fmt.Sprintf("writing the run's reports: %v", err))
			return
		}
		fmt.Fprintf(GinkgoWriter, "reports: %s, %s, %s in %s\n", s.JUnitReport, report.MetadataFile, report.HTMLFile, s.ArtifactFolder)
	})
}

// addSetupSummary names setup's summary in the setup node's report, when
// setup wrote one.
func addSetupSummary(artifacts string) {
	rel := filepath.Join(SetupSummaryDir, summary.JSONFile)
	if _, err := os.Stat(filepath.Join(artifacts, rel)); err == nil {
		AddReportEntry(summary.ReportEntry, rel, ReportEntryVisibilityNever)
	}
}

// versions are the versions under test, for metadata.json and the report.
func versions(env *Environment) map[string]string {
	v := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			switch d.Path {
			case "sigs.k8s.io/kind":
				v["kind-version"] = d.Version
			case "sigs.k8s.io/cluster-api/test":
				v["cluster-api-test-version"] = d.Version
			}
		}
	}
	cfg := env.cfg
	if cfg == nil {
		return v
	}
	for _, name := range []string{config.VarKubernetesVersion, config.VarKubernetesVersionManagement, config.VarKubernetesVersionUpgradeFrom, config.VarKubernetesVersionUpgradeTo} {
		if val, ok := cfg.LookupVariable(name); ok {
			v[strings.ReplaceAll(strings.ToLower(name), "_", "-")] = val
		}
	}
	if cfg.Build.ClusterAPI.Version != "" {
		v["cluster-api-version"] = cfg.Build.ClusterAPI.Version
	}
	if cfg.Build.ClusterAPI.Source != "" {
		v["cluster-api-source"] = cfg.Build.ClusterAPI.Source
	}
	if p := cfg.Build.ClusterAPI.Previous; p != nil {
		v["cluster-api-previous-version"] = p.Version
	}
	if env.Engine.Version != "" {
		// Docker or Podman: a run's result depends on the engine.
		v["container-engine"] = env.Engine.Product()
	}
	if env.E2EConfig != nil {
		for _, p := range env.E2EConfig.Providers {
			var names []string
			for _, pv := range p.Versions {
				names = append(names, pv.Name)
			}
			v["provider-"+p.Name] = strings.Join(names, ",")
		}
	}
	return v
}
