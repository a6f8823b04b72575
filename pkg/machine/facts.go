package machine

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// LabelValue makes a fact usable as a label value the way Seeder does
// (spaces and dots dropped), and then drops what a label value cannot hold
// and trims it to 63 characters. It returns "" when nothing usable is left:
// such a fact gets no label.
func LabelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ' || r == '.':
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		}
	}
	out := b.String()
	if len(out) > validation.LabelValueMaxLength {
		out = out[:validation.LabelValueMaxLength]
	}
	out = strings.TrimFunc(out, func(r rune) bool { return r == '-' || r == '_' })
	if len(validation.IsValidLabelValue(out)) > 0 {
		return ""
	}
	return out
}

// CPUCount is the number of CPUs (sockets), or 0 when unknown.
func (f Facts) CPUCount() int {
	n := 0
	for _, c := range f.CPUs {
		n += c.Count
	}
	return n
}

// CPUSummary describes the CPUs: "2 x Intel Xeon Gold 6314U".
func (f Facts) CPUSummary() string { return components(f.CPUs) }

// NICSummary describes the NICs: "2 x 25Gbps".
func (f Facts) NICSummary() string { return components(f.NICs) }

// DriveSummary describes the drives: "2 x 480GB SSD (boot), 2 x 3.8TB NVME (storage)".
func (f Facts) DriveSummary() string {
	parts := make([]string, 0, len(f.Drives))
	for _, d := range f.Drives {
		desc := strings.TrimSpace(strings.Join(nonEmpty(d.Size, d.Type), " "))
		if desc == "" {
			continue
		}
		if d.Category != "" {
			desc += " (" + d.Category + ")"
		}
		parts = append(parts, count(d.Count)+desc)
	}
	return strings.Join(parts, ", ")
}

func components(cs []Component) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Type == "" {
			continue
		}
		parts = append(parts, count(c.Count)+c.Type)
	}
	return strings.Join(parts, ", ")
}

func count(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n) + " x "
}

func nonEmpty(ss ...string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// String shows the facts for logs.
func (f Facts) String() string {
	return fmt.Sprintf("manufacturer=%q model=%q serial=%q cpus=%q memory=%q drives=%q nics=%q",
		f.Manufacturer, f.Model, f.SerialNumber, f.CPUSummary(), f.Memory, f.DriveSummary(), f.NICSummary())
}
