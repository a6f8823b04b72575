package framework

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// FreeAddr is a loopback address nothing listens on, for a server a test
// must name before it starts (the binary's --http-address, a boot endpoint
// the simulated servers are told of): cluster.FreeAddr, which says how it
// keeps other processes from taking the port meanwhile.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := cluster.FreeAddr()
	require.NoError(t, err)
	return addr
}
