package specs

// withKubetestConfiguration returns in with its ConfigurationPath, if
// unset, the file of the variable KUBETEST_CONFIGURATION: the conformance
// specs' default (the dual-stack spec has its own).
func (r *run) withKubetestConfiguration(in ConformanceInput) ConformanceInput {
	if in.ConfigurationPath == "" {
		in.ConfigurationPath = r.variable(varKubetestConfiguration)
	}
	return in
}
