# Every target runs a script in scripts/, so the pipeline (dapper) and a laptop do
# the same thing.
.PHONY: build test validate ci package generate cluster-binaries clean

build:
	./scripts/build

test:
	./scripts/test

validate:
	./scripts/validate

ci:
	./scripts/ci

package:
	./scripts/package

generate:
	go generate ./...

cluster-binaries:
	./scripts/cluster-binaries

clean:
	rm -rf bin dist .cache
