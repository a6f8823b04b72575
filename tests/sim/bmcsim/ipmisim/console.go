package ipmisim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// connectConsole dials the emulator console, retrying while ipmi_sim
// starts, and reads up to its first prompt.
func (s *Sim) connectConsole(port int) error {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			s.console, s.reader = conn, bufio.NewReader(conn)
			_, err = s.readPrompt()
			return err
		}
		select {
		case <-s.exited:
			return fmt.Errorf("ipmi_sim exited while starting:\n%s", s.Output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ipmi_sim console at %s did not open: %w\n%s", addr, err, s.Output())
		}
	}
}

// readPrompt reads until the console prompt "> ", dropping the telnet
// option bytes (0xff and the two bytes after it) the console sends.
func (s *Sim) readPrompt() (string, error) {
	_ = s.console.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out bytes.Buffer
	for {
		b, err := s.reader.ReadByte()
		if err != nil {
			return out.String(), fmt.Errorf("read ipmi_sim console: %w", err)
		}
		if b == 0xff {
			_, _ = s.reader.Discard(2)
			continue
		}
		out.WriteByte(b)
		if bytes.HasSuffix(out.Bytes(), []byte("> ")) && (out.Len() == 2 || bytes.HasSuffix(out.Bytes(), []byte("\n\r> ")) || bytes.HasSuffix(out.Bytes(), []byte("\n> "))) {
			return strings.TrimSuffix(out.String(), "> "), nil
		}
	}
}

// Command runs one emulator command (sel_add, sensor_set_value, ...) on
// the console and returns what it printed, without the echoed command.
func (s *Sim) Command(line string) (string, error) {
	s.consoleMu.Lock()
	defer s.consoleMu.Unlock()
	if s.console == nil {
		return "", errors.New("ipmi_sim console is closed")
	}
	if _, err := fmt.Fprintf(s.console, "%s\n", line); err != nil {
		return "", fmt.Errorf("write ipmi_sim console: %w", err)
	}
	out, err := s.readPrompt()
	out = strings.ReplaceAll(out, "\r", "")
	// The message trace goes to every console, so the text before the
	// prompt may start with traced messages. ipmi_sim runs one event loop:
	// the echo of the command, its output and the prompt come in one
	// piece, so the answer is what follows the last echo.
	if i := strings.LastIndex(out, line+"\n"); i >= 0 {
		out = out[i+len(line)+1:]
	} else if strings.HasSuffix(out, line) {
		out = ""
	}
	out = strings.TrimSpace(out)
	if err != nil {
		return out, err
	}
	// ipmi_sim marks its complaints with "**" (and ignores unknown words).
	if strings.HasPrefix(out, "**") || strings.Contains(strings.ToLower(out), "error") {
		return out, fmt.Errorf("ipmi_sim %q: %s", line, out)
	}
	return out, nil
}

var addedRecord = regexp.MustCompile(`Added record (\d+)`)

// AddSEL adds a standard SEL record (type 0x02) as if the sensor had
// logged an event: sensor type and number, event type (bit 7 set for a
// deassertion) and the three event data bytes. The BMC stamps the time.
// It returns the record ID.
func (s *Sim) AddSEL(sensorType, sensorNumber, eventType, data1, data2, data3 byte) (uint16, error) {
	// Record type, then 13 bytes: timestamp (4, replaced by the BMC),
	// generator ID 0x0020 (2), event message revision 0x04, sensor type,
	// sensor number, event dir/type, event data 1-3.
	cmd := fmt.Sprintf("sel_add 0x20 0x02 0 0 0 0 0x20 0x00 0x04 %#02x %#02x %#02x %#02x %#02x %#02x",
		sensorType, sensorNumber, eventType, data1, data2, data3)
	out, err := s.Command(cmd)
	if err != nil {
		return 0, err
	}
	m := addedRecord.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("ipmi_sim sel_add: unexpected answer %q", out)
	}
	id, _ := strconv.ParseUint(m[1], 10, 16)
	return uint16(id), nil
}

// SetSensorValue sets an analog sensor's raw reading and lets the BMC log
// the threshold events it causes.
func (s *Sim) SetSensorValue(sensor, value uint8) error {
	_, err := s.Command(fmt.Sprintf("sensor_set_value 0x20 0 %d %#02x 1", sensor, value))
	return err
}

// SetSensorBit sets (or clears) one offset of a discrete sensor and lets
// the BMC log the event.
func (s *Sim) SetSensorBit(sensor, offset uint8, on bool) error {
	v := 0
	if on {
		v = 1
	}
	_, err := s.Command(fmt.Sprintf("sensor_set_bit 0x20 0 %d %d %d 1", sensor, offset, v))
	return err
}
