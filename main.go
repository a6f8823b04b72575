//go:generate go run ./pkg/codegen/cleanup
//go:generate go run ./pkg/codegen
//go:generate ./scripts/api-docs

// Command harvester-equinix-addon is the controller the image ships: it
// runs the addon's chains in a Harvester cluster (see pkg/app).
package main

import (
	"os"

	"github.com/harvester/harvester-equinix-addon/pkg/app"
)

func main() {
	os.Exit(app.Run(os.Args))
}
