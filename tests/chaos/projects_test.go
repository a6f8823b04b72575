package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// The second project the credentials Secret is switched to, and the
// labelled Secret with its credentials an operator keeps at hand.
const (
	projectBToken  = "chaos-metal-token-project-b"
	projectB       = "bbbbbbbb-0000-4000-8000-00000000000b"
	projectBSecret = "chaos-project-b"
)

// createBackoff is the campaign's --create-backoff (the framework's).
const createBackoff = 2 * time.Second

func projectData(token, project string) map[string]string {
	return map[string]string{
		credentials.TokenKey: token, credentials.ProjectKey: project, "JOIN_TOKEN": framework.JoinToken,
	}
}

// setUpProjects adds project B and the operator's Secret for it.
func (r *run) setUpProjects() {
	r.env.Sim.AddProject(projectBToken, projectB)
	raw := map[string][]byte{}
	for k, v := range projectData(projectBToken, projectB) {
		raw[k] = []byte(v)
	}
	_, err := r.env.Kube.CoreV1().Secrets(framework.Namespace).Create(r.env.Ctx, framework.CredentialsSecret(projectBSecret, raw), metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		require.NoError(r.t, err)
	}
}

// switchProject points the default credentials Secret at project B (or
// back at the campaign's project), as an operator editing it in place does.
func (r *run) switchProject(toB bool) string {
	if toB {
		r.env.SetSecretData(projectData(projectBToken, projectB))
		return "the default Secret names project B"
	}
	r.env.SetSecretData(projectData(framework.MetalToken, framework.ProjectID))
	return "the default Secret names the campaign's project"
}

// remedyProjects does what the ProjectMismatch condition tells an operator:
// an Instance whose device was made in project B, while its Secret names
// another project, is pointed at a Secret of project B.
func (r *run) remedyProjects() {
	insts, err := r.runInstances()
	if err != nil {
		return // the apiserver may be restarting; the next tick tries again
	}
	fixed := 0
	for i := range insts {
		inst := &insts[i]
		c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceCredentialsReady)
		if inst.Status.ProjectID != projectB || c == nil || c.Reason != equinixv1.ReasonProjectMismatch {
			continue
		}
		patch := fmt.Sprintf(`{"spec":{"credentialsSecret":{"name":%q}}}`, projectBSecret)
		if _, err := r.env.Client.EquinixV1().Instances().Patch(r.env.Ctx, inst.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
			fixed++
		}
	}
	if fixed > 0 {
		r.remedied.Add(int64(fixed))
	}
}

// projectBDevices are the devices left in project B.
func (r *run) projectBDevices() []metalv1.Device { return r.env.Sim.Devices(projectB) }

// createLog records every device create on the wire with the hostname it
// asked for, so refused creates can be told apart per Instance.
type createLog struct {
	mu      sync.Mutex
	entries []createEntry
}

type createEntry struct {
	at       time.Time
	hostname string
	status   int
	body     string
}

func (l *createLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/devices") || !strings.Contains(req.URL.Path, "/projects/") {
			next.ServeHTTP(w, req)
			return
		}
		raw, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(raw))
		var in struct {
			Hostname string `json:"hostname"`
		}
		_ = json.Unmarshal(raw, &in)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		at := time.Now()
		defer func() {
			l.mu.Lock()
			l.entries = append(l.entries, createEntry{at: at, hostname: in.Hostname, status: rec.status, body: rec.body.String()})
			l.mu.Unlock()
		}()
		next.ServeHTTP(rec, req)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status >= 400 && s.body.Len() < 512 {
		s.body.Write(b)
	}
	return s.ResponseWriter.Write(b)
}

// refusalViolations checks "refused creates ≤ one per backoff step": for
// each Instance, a create refused by a 422 comes no sooner after the one
// before than the doubling wait the refusals so far earned (2s, 4s, ...).
func (l *createLog) refusalViolations(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	byHost := map[string][]createEntry{}
	for _, e := range l.entries {
		if strings.HasPrefix(e.hostname, prefix) && e.status == http.StatusUnprocessableEntity {
			byHost[e.hostname] = append(byHost[e.hostname], e)
		}
	}
	var out []string
	for host, refused := range byHost {
		sort.Slice(refused, func(a, b int) bool { return refused[a].at.Before(refused[b].at) })
		for i := 1; i < len(refused); i++ {
			want := createBackoff << (i - 1)
			if want > 30*time.Minute {
				want = 30 * time.Minute
			}
			// The wait is stored with whole seconds and rounded up, and
			// the two timestamps here are taken around the requests.
			if gap := refused[i].at.Sub(refused[i-1].at); gap < want-100*time.Millisecond {
				out = append(out, fmt.Sprintf("instance %s: refused create %d came %s after the one before, within its backoff step of %s (%s)",
					host, i+1, gap.Round(10*time.Millisecond), want, strings.TrimSpace(refused[i].body)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// refusals counts the refused creates of a run.
func (l *createLog) refusals(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if strings.HasPrefix(e.hostname, prefix) && e.status == http.StatusUnprocessableEntity {
			n++
		}
	}
	return n
}

// remedyWhileQuiescing applies the remedy every half second until stopped.
func (r *run) remedyWhileQuiescing() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			r.remedyProjects()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
