package localcluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditFlags are the API server's flags for Options.AuditLog (or EnvAuditLog): a policy
// that records every request at level Metadata once it is answered.
func (c *Cluster) auditFlags() ([]string, error) {
	file := c.opts.AuditLog
	if file == "" {
		file = os.Getenv(EnvAuditLog)
	}
	if file == "" {
		return nil, nil
	}
	c.AuditLog = file
	policy := filepath.Join(c.Dir, "audit-policy.yaml")
	const metadataOnly = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
`
	if err := os.WriteFile(policy, []byte(metadataOnly), 0o600); err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + file, "--audit-log-format=json"}, nil
}

// AuditKey is a kind of request in the audit log: the asking component (the product of its
// User-Agent, "slotplane-worker" of "slotplane-worker/devel (linux/amd64)"), the verb, the
// resource with its subresource ("pods/binding") and, for a request that failed, its code
// (0 for one that did not).
type AuditKey struct {
	Agent, Verb, Resource string
	Code                  int
}

func (k AuditKey) String() string {
	s := k.Agent + " " + k.Verb + " " + k.Resource
	if k.Code != 0 {
		s += fmt.Sprintf(" → %d", k.Code)
	}
	return s
}

// ReadAudit counts the requests of an audit log (Options.AuditLog) answered at or after
// since, by AuditKey. Watches are left out: they last, they are not asked again and again.
func ReadAudit(file string, since time.Time) (map[AuditKey]int, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[AuditKey]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for line := 1; sc.Scan(); line++ {
		var ev struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			StageTimestamp time.Time `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if ev.Verb == "watch" || ev.StageTimestamp.Before(since) {
			continue
		}
		k := AuditKey{Verb: ev.Verb, Resource: "(no resource)"}
		k.Agent, _, _ = strings.Cut(ev.UserAgent, "/")
		if ev.ObjectRef != nil && ev.ObjectRef.Resource != "" {
			k.Resource = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				k.Resource += "/" + ev.ObjectRef.Subresource
			}
		}
		if ev.ResponseStatus != nil && (ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code > 299) {
			k.Code = ev.ResponseStatus.Code
		}
		counts[k]++
	}
	return counts, sc.Err()
}
