package virtualmedia

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// cdDrive is the machine's CD drive's block backend; cdDevice its device,
// which QMP's medium commands name.
const (
	cdDrive  = "cd0"
	cdDevice = "cdrom0"
)

// qmp is a QEMU Machine Protocol connection: how the test's BMC changes
// the medium in the machine's CD drive and lets a paused machine run.
type qmp struct {
	conn net.Conn
	dec  *json.Decoder
}

// dialQMP connects to QEMU's QMP socket, which QEMU creates as it starts
// (polled for until ctx ends), and leaves capabilities negotiation.
func dialQMP(ctx context.Context, path string) (*qmp, error) {
	var conn net.Conn
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for conn == nil {
		c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
		if err == nil {
			conn = c
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("QMP socket %s: %w", path, err)
		case <-tick.C:
		}
	}
	q := &qmp{conn: conn, dec: json.NewDecoder(conn)}
	var greeting struct {
		QMP json.RawMessage `json:"QMP"`
	}
	if err := q.dec.Decode(&greeting); err != nil || greeting.QMP == nil {
		_ = conn.Close()
		return nil, fmt.Errorf("QMP greeting: %v", err)
	}
	if err := q.run("qmp_capabilities", nil, nil); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return q, nil
}

// run executes one command and reads its answer into out (when not nil),
// passing over the events QEMU sends meanwhile.
func (q *qmp) run(cmd string, args, out any) error {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	if err := json.NewEncoder(q.conn).Encode(req); err != nil {
		return fmt.Errorf("QMP %s: %w", cmd, err)
	}
	for {
		var msg struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := q.dec.Decode(&msg); err != nil {
			return fmt.Errorf("QMP %s: %w", cmd, err)
		}
		switch {
		case msg.Event != "":
			continue
		case msg.Error != nil:
			return fmt.Errorf("QMP %s: %s: %s", cmd, msg.Error.Class, msg.Error.Desc)
		case out != nil:
			return json.Unmarshal(msg.Return, out)
		}
		return nil
	}
}

func (q *qmp) close() { _ = q.conn.Close() }

// cdMedium is the file in the CD drive ("" for none), from query-block.
func (q *qmp) cdMedium() (string, error) {
	var blocks []struct {
		Device   string `json:"device"`
		QDev     string `json:"qdev"`
		Inserted *struct {
			File string `json:"file"`
		} `json:"inserted"`
	}
	if err := q.run("query-block", nil, &blocks); err != nil {
		return "", err
	}
	for _, b := range blocks {
		if b.Device == cdDrive {
			if b.Inserted == nil {
				return "", nil
			}
			return b.Inserted.File, nil
		}
	}
	return "", fmt.Errorf("no block device %s", cdDrive)
}
