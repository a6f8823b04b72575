// A fence, not a build recipe: this go.mod keeps main.go out of the addon's
// module (its `go build ./...`, `go vet ./...` and `go mod tidy`), because
// Harvester pins Kubernetes libraries the addon does not use. scripts/harvester-node-down
// builds main.go in the tools cache with a go.mod generated from Harvester's own,
// at the version the addon's go.mod requires.
module hea.local/harvesternodedown

go 1.25.7
