module github.com/capd-e2e/capd-e2e

go 1.26.0

// sigs.k8s.io/cluster-api/test requires these at a placeholder version; the
// releases that match it are v1.14.2 (v1.14.3+ are not served by the proxy).
replace (
	sigs.k8s.io/cluster-api => sigs.k8s.io/cluster-api v1.14.2
	sigs.k8s.io/cluster-api/api => sigs.k8s.io/cluster-api/api v1.14.2
)
