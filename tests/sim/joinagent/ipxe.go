package joinagent

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// bootResult is what an iPXE script did.
type bootResult struct {
	// Kernel is the kernel URL and Args its command line, variables expanded.
	Kernel string
	Args   []string
	Initrd []string
	// Shell is set when the script ended in the iPXE shell (nothing booted).
	Shell bool
}

var varPattern = regexp.MustCompile(`\$\{([^}]+)\}`)

// runIPXE interprets the subset of iPXE the addon's scripts use — set, goto and
// labels, && / || chains, dhcp, iflinkwait, kernel, initrd, boot, shell, echo —
// so that a script reading the wrong ${netX/mac} installs with the wrong MAC
// here exactly as it would on a real server. vars holds ifname and netN/mac.
func runIPXE(script string, vars map[string]string) (bootResult, error) {
	lines := strings.Split(strings.ReplaceAll(script, "\r\n", "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "#!ipxe" {
		return bootResult{}, errors.New("script does not start with #!ipxe")
	}
	labels := map[string]int{}
	for i, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, ":") {
			labels[strings.TrimPrefix(t, ":")] = i
		}
	}
	env := map[string]string{}
	for k, v := range vars {
		env[k] = v
	}
	var res bootResult
	for pc, steps := 1, 0; pc < len(lines); pc++ {
		if steps++; steps > 10000 {
			return res, errors.New("script loops")
		}
		line := strings.TrimSpace(lines[pc])
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ":") {
			continue
		}
		jump, done, err := runLine(line, env, &res)
		if err != nil {
			return res, fmt.Errorf("line %d %q: %w", pc+1, line, err)
		}
		if done {
			return res, nil
		}
		if jump != "" {
			target, ok := labels[jump]
			if !ok {
				return res, fmt.Errorf("line %d: goto unknown label %q", pc+1, jump)
			}
			pc = target
		}
	}
	// Falling off the end of a script drops to the shell.
	res.Shell = true
	return res, nil
}

// runLine runs one line of && / || chained commands. It returns a label to
// jump to, or done when the script booted or entered the shell.
func runLine(line string, env map[string]string, res *bootResult) (jump string, done bool, err error) {
	ok := true
	for _, part := range splitChain(line) {
		if part.op == "&&" && !ok || part.op == "||" && ok {
			continue
		}
		words, err := tokenize(expand(part.cmd, env))
		if err != nil {
			return "", false, err
		}
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "set":
			if len(words) < 2 {
				return "", false, errors.New("set needs a name")
			}
			env[words[1]] = strings.Join(words[2:], " ")
		case "goto":
			if len(words) != 2 {
				return "", false, errors.New("goto needs one label")
			}
			return words[1], false, nil
		case "kernel", "imgexec", "chain":
			if len(words) < 2 {
				return "", false, errors.New(words[0] + " needs a URL")
			}
			if words[0] != "kernel" {
				return "", false, errors.New(words[0] + " is not supported by the simulated iPXE")
			}
			res.Kernel, res.Args = words[1], words[2:]
		case "initrd":
			res.Initrd = append(res.Initrd, words[1:]...)
		case "boot":
			if res.Kernel == "" {
				return "", false, errors.New("boot without a kernel")
			}
			return "", true, nil
		case "shell":
			res.Shell = true
			return "", true, nil
		case "dhcp", "ifconf", "iflinkwait", "echo", "sleep", "prompt":
		default:
			return "", false, fmt.Errorf("unknown command %q", words[0])
		}
		ok = true
	}
	return "", false, nil
}

type chainPart struct{ op, cmd string }

func splitChain(line string) []chainPart {
	var parts []chainPart
	op := ""
	for {
		i, next := indexOp(line)
		if i < 0 {
			return append(parts, chainPart{op: op, cmd: strings.TrimSpace(line)})
		}
		parts = append(parts, chainPart{op: op, cmd: strings.TrimSpace(line[:i])})
		op, line = next, line[i+2:]
	}
}

func indexOp(s string) (int, string) {
	a, o := strings.Index(s, "&&"), strings.Index(s, "||")
	switch {
	case a < 0 && o < 0:
		return -1, ""
	case o < 0 || (a >= 0 && a < o):
		return a, "&&"
	default:
		return o, "||"
	}
}

func expand(s string, env map[string]string) string {
	return varPattern.ReplaceAllStringFunc(s, func(m string) string {
		return env[m[2:len(m)-1]]
	})
}

// tokenize splits on spaces, keeping double-quoted runs (quotes stay, as iPXE
// passes them to the kernel command line).
func tokenize(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case (r == ' ' || r == '\t') && !quoted:
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		return nil, errors.New("unbalanced quote")
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words, nil
}
