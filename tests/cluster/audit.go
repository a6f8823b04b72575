package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// auditPolicy records who did what to which resource, never request or
// response bodies (they would hold Secrets).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
`

func (c *Cluster) auditLogPath() string { return filepath.Join(c.dir, "audit.log") }

func (c *Cluster) auditArgs() ([]string, error) {
	policy := filepath.Join(c.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + c.auditLogPath(),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
	}, nil
}

// AuditEvent is the part of an audit event the tests read.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser,omitempty"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef,omitempty"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus,omitempty"`
	Stage string `json:"stage"`
}

// AuditEvents reads the audit log written so far (the cluster must run with
// Options.AuditLog).
func (c *Cluster) AuditEvents() ([]AuditEvent, error) {
	if !c.opts.AuditLog {
		return nil, fmt.Errorf("the cluster runs without an audit log")
	}
	f, err := os.Open(c.auditLogPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}
