package specs

// withKubetestConfiguration returns in with its ConfigurationPath, if
// unset, the file of the variable KUBETEST_CONFIGURATION: the conformance
// specs' default (the dual-stack spec has its own). In a file of its own:
// timeouts_test.go checks the variables a spec's declared files read
// against its facts, and the dual-stack spec, which runs conformance.go,
// never reads this one.
func (r *run) withKubetestConfiguration(in ConformanceInput) ConformanceInput {
	if in.ConfigurationPath == "" {
		in.ConfigurationPath = r.variable(varKubetestConfiguration)
	}
	return in
}
