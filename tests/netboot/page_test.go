package netboot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// page is the documentation these tests keep true.
const page = "docs/network-boot.md"

// The addresses the page's configurations name, which the test's network
// holds as they are.
const (
	pageInterface = "eth1"
	pageEndpoint  = "192.168.10.5"
	pagePort      = "30881"
	pageTFTPRoot  = "/srv/tftp"
)

// documented returns the code block of the page that follows the marker
// <!-- tested: name -->, without the indentation the two share inside a
// list item.
func documented(t *testing.T, name string) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, page))
	require.NoError(t, err)
	marker := "<!-- tested: " + name + " -->\n"
	i := strings.Index(string(raw), marker)
	require.GreaterOrEqual(t, i, 0, "%s has no block marked %q", page, name)
	rest := string(raw)[i+len(marker):]
	indent := rest[:len(rest)-len(strings.TrimLeft(rest, " "))]
	require.True(t, strings.HasPrefix(rest, indent+"```"), "the marker %q is not right above a code block", name)
	rest = rest[strings.Index(rest, "\n")+1:]
	end := strings.Index(rest, "\n"+indent+"```")
	require.GreaterOrEqual(t, end, 0, "the block %q does not end", name)
	var block strings.Builder
	for _, line := range strings.SplitAfter(rest[:end+1], "\n") {
		block.WriteString(strings.TrimPrefix(line, indent))
	}
	return block.String()
}

// withTFTPRoot is a dnsmasq configuration with the page's TFTP root
// replaced by dir, the only line the test changes.
func withTFTPRoot(t *testing.T, conf, dir string) string {
	t.Helper()
	line := "tftp-root=" + pageTFTPRoot
	require.Equal(t, 1, strings.Count(conf, line), "the configuration names its TFTP root once: %s", conf)
	return strings.Replace(conf, line, "tftp-root="+dir, 1)
}
