# Every target runs a script in scripts/, so the pipeline (dapper) and a laptop do
# the same thing.
.PHONY: build test validate ci package generate cluster-binaries clean demo demo-bmc demo-owned dev-up dev-down bench chaos

build:
	./scripts/build

test:
	./scripts/test

validate:
	./scripts/validate

ci:
	./scripts/ci

# dist/charts (the chart and a Helm repository index) and, when a Docker engine
# is reachable, the image.
package:
	./scripts/package

generate:
	go generate ./...

cluster-binaries:
	./scripts/cluster-binaries

# Shows the addon provisioning the seed README's pool on a local cluster and the
# Metal simulator, then tears everything down. A demo is a value in
# tests/cmd/devenv/demos.go; `./scripts/devenv demo <name>` runs it.
demo:
	./scripts/devenv demo

# Shows a node the addon did not provision, mapped to a simulated Redfish BMC by
# the Secret and Inventory Harvester's UI writes, served by the controller in
# the seeder mode: its facts, an event and a power cycle; tears down.
demo-bmc:
	./scripts/devenv demo bmc

# Shows a pool on servers you own: the controller in the seeder mode with
# --owned-pools, three UEFI QEMU machines behind ipmi_sim BMCs that PXE-boot with real
# iPXE into its boot endpoint, their installs played as the tests play them; the
# example pool grows to 2, is scaled to 0 and releases them; tears down.
# `./scripts/devenv demo owned-sim` is the same on simulated Redfish BMCs.
demo-owned:
	./scripts/devenv demo owned

# Leaves the local cluster, simulator and controller running; prints how to use them.
dev-up:
	./scripts/devenv up

dev-down:
	./scripts/devenv down

# Measures API frugality, controller overhead, idle cost, scale and throttling
# against the simulator; prints one table and writes .cache/bench/results.md.
bench:
	./scripts/bench

# The randomized fault campaign (tests/chaos): CHAOS_RUNS runs (default 2) from
# seed CHAOS_SEED (default 1); `CHAOS_RUNS=500 make chaos` is the long one.
chaos:
	./scripts/chaos

clean:
	rm -rf bin dist .cache
