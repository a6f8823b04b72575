package qemubmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// qmp is a QEMU Machine Protocol connection: how the BMC changes the
// medium in the machine's CD drive, lets a paused machine run, resets it
// and ends it.
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
	if err := q.dec.Decode(&greeting); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("QMP greeting: %w", err)
	}
	if greeting.QMP == nil {
		_ = conn.Close()
		return nil, errors.New("QMP greeting: not a QMP server")
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

// The arguments of the medium commands: put an image file in the CD
// drive, read-only, replacing what it held; or empty it, even when the
// guest locked its tray (a BMC's virtual CD goes when the BMC is told,
// whatever the host thinks).
func changeMediumArgs(file string) map[string]any {
	return map[string]any{"id": cdDevice, "filename": file, "format": "raw", "read-only-mode": "read-only"}
}

var ejectArgs = map[string]any{"id": cdDevice, "force": true}
