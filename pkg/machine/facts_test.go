package machine

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLabelValueIsSeedersThenLabelSafe(t *testing.T) {
	for in, want := range map[string]string{
		"Dell Inc.":              "DellInc",
		"PowerEdge R640":         "PowerEdgeR640",
		"c3.small.x86":           "c3smallx86",
		"Intel(R) Xeon(R) 6314U": "IntelRXeonR6314U",
		"  ":                     "",
		"---":                    "",
		"ABC-123_":               "ABC-123",
		"Ünïcode 42":             "ncode42",
	} {
		assert.Equal(t, want, LabelValue(in), "%q", in)
	}
	long := ""
	for i := 0; i < 80; i++ {
		long += "a"
	}
	assert.Len(t, LabelValue(long), 63)
}

func TestSummaries(t *testing.T) {
	f := Facts{
		CPUs:   []Component{{Count: 2, Type: "Intel Xeon Gold 6314U"}},
		NICs:   []Component{{Count: 2, Type: "25Gbps"}, {Count: 0, Type: "1Gbps"}, {Count: 3}},
		Drives: []Drive{{Count: 2, Size: "480GB", Type: "SSD", Category: "boot"}, {Count: 1, Type: "NVME"}, {Count: 4}},
	}
	assert.Equal(t, 2, f.CPUCount())
	assert.Equal(t, "2 x Intel Xeon Gold 6314U", f.CPUSummary())
	assert.Equal(t, "2 x 25Gbps, 1Gbps", f.NICSummary())
	assert.Equal(t, "2 x 480GB SSD (boot), 1 x NVME", f.DriveSummary())
	assert.Equal(t, "", Facts{}.DriveSummary())
}
