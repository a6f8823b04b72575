// Command cleanup removes generated code before it is generated again, so a type
// that was deleted does not leave a stale client behind.
package main

import (
	"os"

	"github.com/rancher/wrangler/v3/pkg/cleanup"
	"github.com/sirupsen/logrus"
)

func main() {
	if err := cleanup.Cleanup("./pkg/apis"); err != nil {
		logrus.Fatal(err)
	}
	if err := os.RemoveAll("./pkg/generated"); err != nil {
		logrus.Fatal(err)
	}
}
