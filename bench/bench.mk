# Benchmarks: measurements of the harness, apart from the product's targets
# (included by the Makefile). Each is a Go benchmark in bench/ (build tag
# bench) or beside the code it measures, but bench-cold, a script still
# (bench/scripts/cold.sh); what each measured, and the
# numbers, are in docs/performance.md. Results: $(ARTIFACTS)/bench-<name>/.

.PHONY: bench bench-boot bench-kind bench-e2e bench-lb bench-gobuild bench-images bench-cold bench-thp bench-scale bench-inner-loop

# BENCH runs one of bench/'s benchmarks once (-benchtime 1x) or in rounds.
BENCH = go test -tags bench -count=1 -timeout 6h -run '^$$' -benchtime

bench: ## Exec latency: our runtime vs the docker CLI, idle and with every CPU busy (BENCH_N execs, default 50).
	cd framework/runtime && go test -count=1 -run '^$$' -bench '^BenchmarkExec(Phases)?$$' -benchtime $${BENCH_N:-50}x ./moby/

bench-boot: ## A machine from create to a running containerd, per node image (IMAGES, default KUBERNETES_VERSION's), rounds interleaved (ROUNDS, default 5).
	$(BENCH) $${ROUNDS:-5}x -bench '^BenchmarkBoot$$' ./bench/

bench-kind: ## A one-node kind cluster per node image (CAPD_E2E_BENCH_NODE_IMAGES): create, node Ready (BENCH_N rounds, default 5).
	go test -tags images -count=1 -run '^$$' -bench '^BenchmarkIntegrationKindNodeReady$$' -benchtime $${BENCH_N:-5}x ./factory/nodeimage/

bench-images: ## Cold `make images` measured both ways in one run: one step at a time, then in parallel (SIDES, IMAGES_ONLY).
	$(BENCH) 1x -bench '^BenchmarkImages$$' ./bench/

bench-cold: ## A newcomer's cold make test-e2e (empty caches, no image of ours), BEFORE_REF=<commit> and AFTER_REF (default HEAD) in one run: wall, images phase, suite, CPU, each step.
	bench/scripts/cold.sh

bench-thp: ## A cold Go build with transparent huge pages at madvise and at always, rounds interleaved (ROUNDS, default 3; root).
	$(BENCH) $${ROUNDS:-3}x -bench '^BenchmarkTHP$$' ./bench/

bench-gobuild: ## Cold Go builds side by side (SIDES: sequential at-once gogc dwarf nodwarf tags notags), after make images.
	$(BENCH) 1x -bench '^BenchmarkGoBuild$$' ./bench/

bench-e2e: ## The PR job's suite time and setup phases (BEFORE_REF=<commit>: also from there), and our quick-start vs upstream's.
	$(BENCH) 1x -bench '^BenchmarkE2E$$' ./bench/

bench-lb: ## A node that starts serving: time to traffic through the cloud provider's load balancer (BENCH_N rounds, default 10).
	IMAGES_ONLY=haproxy scripts/images.sh
	cd cloudprovider && go test -count=1 -run '^$$' -bench '^BenchmarkIntegrationLoadBalancerNodeUp$$' -benchtime $${BENCH_N:-10}x ./docker/

bench-scale: ## One quick-start alone, then three at once (GINKGO_NODES=3); BENCH_SCALE_BEYOND="5 7": more until a run fails.
	$(BENCH) 1x -bench '^BenchmarkScale$$' ./bench/

bench-inner-loop: ## Edit → spec green: a full make test-e2e against make iterate on a kept cluster, in one run (CAPI_SOURCE_DIR, ROUNDS).
	$(BENCH) 1x -bench '^BenchmarkInnerLoop$$' ./bench/
