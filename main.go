//go:generate go run ./pkg/codegen/cleanup
//go:generate go run ./pkg/codegen

package main

import (
	"os"

	"github.com/harvester/harvester-equinix-addon/pkg/app"
)

func main() {
	os.Exit(app.Run(os.Args))
}
