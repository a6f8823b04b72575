package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Revision is one stored version of an etcd key: the revision of the write
// that made it (an object's resourceVersion) and the value it wrote (for
// the apiserver's objects, their protobuf encoding).
type Revision struct {
	ModRevision int64
	Value       []byte
}

// KeyHistory reads every version of an etcd key the store still keeps,
// newest first, through etcd's JSON gateway: what the apiserver held,
// write by write, whatever its watchers saw. The apiserver compacts the
// store every few minutes; the versions before the last compaction are
// gone, and the history ends there (compacted says so).
func (c *Cluster) KeyHistory(ctx context.Context, key string) (history []Revision, compacted bool, err error) {
	client := &http.Client{Timeout: 5 * time.Second}
	var at int64 // 0: the newest version
	for {
		kv, gone, err := c.rangeAt(ctx, client, key, at)
		switch {
		case err != nil:
			return history, false, err
		case gone:
			return history, true, nil
		case kv == nil:
			return history, false, nil
		}
		history = append(history, Revision{ModRevision: kv.mod, Value: kv.value})
		if kv.mod <= kv.create {
			return history, false, nil
		}
		at = kv.mod - 1
	}
}

type keyVersion struct {
	create, mod int64
	value       []byte
}

// rangeAt reads key as it was at revision at (0: now); gone says the
// revision was compacted away.
func (c *Cluster) rangeAt(ctx context.Context, client *http.Client, key string, at int64) (*keyVersion, bool, error) {
	body, err := json.Marshal(map[string]any{"key": []byte(key), "revision": at})
	if err != nil {
		return nil, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+"/v3/kv/range", bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("reading etcd key %s at revision %d: %w", key, at, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, false, err
	}
	var out struct {
		Kvs []struct {
			CreateRevision string `json:"create_revision"`
			ModRevision    string `json:"mod_revision"`
			Value          []byte `json:"value"`
		} `json:"kvs"`
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, false, fmt.Errorf("etcd's answer for key %s: %w: %s", key, err, raw)
	}
	// Code 11 (OutOfRange) is etcd's "required revision has been compacted".
	if out.Code == 11 {
		return nil, true, nil
	}
	if resp.StatusCode != http.StatusOK || out.Error != "" {
		return nil, false, fmt.Errorf("etcd refused reading key %s at revision %d: %s", key, at, raw)
	}
	if len(out.Kvs) == 0 {
		return nil, false, nil
	}
	kv := out.Kvs[0]
	create, err := strconv.ParseInt(kv.CreateRevision, 10, 64)
	if err != nil {
		return nil, false, err
	}
	mod, err := strconv.ParseInt(kv.ModRevision, 10, 64)
	if err != nil {
		return nil, false, err
	}
	return &keyVersion{create: create, mod: mod, value: kv.Value}, false, nil
}
