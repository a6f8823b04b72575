//go:generate go run ./pkg/codegen/cleanup
//go:generate go run ./pkg/codegen
//go:generate ./scripts/api-docs

package main

import (
	"os"

	"github.com/harvester/harvester-equinix-addon/pkg/app"
)

func main() {
	os.Exit(app.Run(os.Args))
}
