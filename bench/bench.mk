# Benchmarks: measurements of the harness, apart from the product's targets
# (included by the Makefile). What each measured, and the numbers, are in
# docs/performance.md.

.PHONY: bench bench-boot bench-kind bench-e2e bench-lb bench-gobuild bench-images bench-cold bench-thp bench-scale bench-inner-loop

bench: ## Exec latency: our runtime vs the docker CLI, idle and loaded.
	bench/scripts/exec.sh

bench-boot: ## A machine from docker create to a running containerd, per node image (IMAGES, default KUBERNETES_VERSION's), rounds interleaved.
	bench/scripts/boot.sh

bench-kind: ## A one-node kind cluster per node image (CAPD_E2E_BENCH_NODE_IMAGES): create, node Ready (BENCH_N rounds, default 5).
	go test -tags images -count=1 -run '^$$' -bench '^BenchmarkIntegrationKindNodeReady$$' -benchtime $${BENCH_N:-5}x ./factory/nodeimage/

bench-images: ## Cold `make images` measured both ways in one run: one step at a time, then in parallel.
	bench/scripts/images.sh

bench-cold: ## A newcomer's cold make test-e2e (empty caches, no image of ours), BEFORE_REF=<commit> and AFTER_REF (default HEAD) in one run: wall, images phase, suite, CPU, each step.
	bench/scripts/cold.sh

bench-thp: ## A cold Go build with transparent huge pages at madvise and at always, rounds interleaved (ROUNDS, default 3; root).
	bench/scripts/thp.sh

bench-gobuild: ## Cold Go builds side by side (SIDES: sequential at-once gogc dwarf nodwarf tags notags), after make images.
	bench/scripts/gobuild.sh

bench-e2e: ## The PR job's suite time and setup phases (BEFORE_REF=<commit>: also from there), and our quick-start vs upstream's.
	bench/scripts/e2e.sh

bench-lb: ## A node that starts serving: time to traffic through the cloud provider's load balancer (BENCH_N rounds, default 10).
	IMAGES_ONLY=haproxy scripts/images.sh
	cd cloudprovider && go test -count=1 -run '^$$' -bench '^BenchmarkIntegrationLoadBalancerNodeUp$$' -benchtime $${BENCH_N:-10}x ./docker/

bench-scale: ## One quick-start alone, then three at once (GINKGO_NODES=3); BENCH_SCALE_BEYOND="5 7": more until a run fails.
	bench/scripts/scale.sh

bench-inner-loop: ## Edit → spec green: a full make test-e2e against make iterate on a kept cluster, in one run (CAPI_SOURCE_DIR, ROUNDS).
	bench/scripts/inner-loop.sh
