#!/usr/bin/env bash
# `make lint`: gofmt and go vet over every module in the repository.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

unformatted=$(git ls-files '*.go' | xargs -r gofmt -l)
if [[ -n "$unformatted" ]]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
go vet ./...
go vet -tags e2e ./e2e/... ./bench/...
go vet -tags bench ./bench/
go vet -tags images ./factory/... ./framework/...
go vet -tags faults ./internal/faults/
(cd framework/runtime && go vet ./...)
(cd cloudprovider && go vet ./...)
(cd cloudprovider/names && go vet ./...)
if [[ -f examples/go.mod ]]; then (cd examples && go vet -tags e2e ./...); fi
echo "lint: ok"
