package wire

import (
	"encoding/json"
	"fmt"
	"os"
)

// ConnectionInfo is a kernel connection file, as written by Jupyter.
type ConnectionInfo struct {
	Transport       string `json:"transport"` // "tcp" or "ipc"
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	ControlPort     int    `json:"control_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"` // "hmac-sha256"
	KernelName      string `json:"kernel_name"`
}

// ReadConnectionFile reads and validates a connection file.
func ReadConnectionFile(path string) (*ConnectionInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read connection file: %w", err)
	}
	var c ConnectionInfo
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("connection file %s: not valid JSON: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("connection file %s: %w", path, err)
	}
	return &c, nil
}

// Validate checks the fields the kernel needs.
func (c *ConnectionInfo) Validate() error {
	if c.Transport == "" {
		c.Transport = "tcp"
	}
	if c.Transport != "tcp" && c.Transport != "ipc" {
		return fmt.Errorf("transport: must be tcp or ipc (got %q)", c.Transport)
	}
	if c.IP == "" {
		return fmt.Errorf("ip: must not be empty")
	}
	if c.Key != "" && c.SignatureScheme != "hmac-sha256" {
		return fmt.Errorf("signature_scheme: must be hmac-sha256 (got %q)", c.SignatureScheme)
	}
	for _, p := range []struct {
		name string
		port int
	}{{"shell_port", c.ShellPort}, {"iopub_port", c.IOPubPort}, {"stdin_port", c.StdinPort},
		{"control_port", c.ControlPort}, {"hb_port", c.HBPort}} {
		if p.port <= 0 || p.port > 65535 {
			return fmt.Errorf("%s: must be in 1..65535 (got %d)", p.name, p.port)
		}
	}
	return nil
}

// Endpoint is the ZeroMQ address of a port: tcp://ip:port, or for the ipc
// transport ipc://ip-port as Jupyter names its socket files.
func (c *ConnectionInfo) Endpoint(port int) string {
	if c.Transport == "ipc" {
		return fmt.Sprintf("ipc://%s-%d", c.IP, port)
	}
	return fmt.Sprintf("tcp://%s:%d", c.IP, port)
}
