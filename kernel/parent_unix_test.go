//go:build unix

package kernel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragen-go/ragen/kernel/wire"
)

// TestHelperKernel is the kernel process of TestOrphanExits: it serves the
// connection file in RAGEN_TEST_KERNEL_CONN and exits when Run returns.
func TestHelperKernel(t *testing.T) {
	conn := os.Getenv("RAGEN_TEST_KERNEL_CONN")
	if conn == "" {
		t.Skip("run by TestOrphanExits")
	}
	err := Run(context.Background(), conn, Options{Log: log.New(os.Stderr, "helper kernel: ", 0)})
	if err != nil {
		os.Exit(3)
	}
	os.Exit(0)
}

// TestOrphanExits starts a kernel from a shell that passes its pid in
// JPY_PARENT_PID, as jupyter_client does, kills the shell with SIGKILL,
// and expects the kernel to exit and free its ports (issue 27).
func TestOrphanExits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kernel process")
	}
	ports := freePorts(t, 5)
	conn := wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: ports[0], IOPubPort: ports[1],
		StdinPort: ports[2], ControlPort: ports[3], HBPort: ports[4], Key: "k", SignatureScheme: "hmac-sha256"}
	b, _ := json.Marshal(conn)
	path := filepath.Join(t.TempDir(), "conn.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "kernel.log")
	// The shell starts the kernel in the background, says its pid, and waits.
	parent := exec.Command("/bin/sh", "-c", `JPY_PARENT_PID=$$ "$0" -test.run='^TestHelperKernel$' 2>"$1" & echo $!; wait`,
		os.Args[0], logFile)
	parent.Env = append(os.Environ(), "RAGEN_TEST_KERNEL_CONN="+path)
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	kpid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		parent.Process.Kill()
		parent.Wait()
		t.Fatalf("no kernel pid from the shell: %q %v %v", line, err, perr)
	}
	defer syscall.Kill(kpid, syscall.SIGKILL) // if the test fails
	go io.Copy(io.Discard, stdout)
	showLog := func() string { b, _ := os.ReadFile(logFile); return string(b) }

	// Wait until the kernel serves: its heartbeat port accepts connections.
	hb := conn.Endpoint(conn.HBPort)[len("tcp://"):]
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := net.Dial("tcp", hb)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel did not start:\n%s", showLog())
		}
		time.Sleep(50 * time.Millisecond)
	}

	parent.Process.Kill()
	parent.Wait()
	// The orphaned kernel notices within a poll or two and releases its
	// ports; the deadline is generous for a loaded machine.
	deadline = time.Now().Add(30 * time.Second)
	for {
		l, err := net.Listen("tcp", conn.Endpoint(conn.ShellPort)[len("tcp://"):])
		if err == nil {
			l.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after its parent was killed, the kernel still holds its shell port (%v):\n%s", err, showLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := showLog(); !strings.Contains(out, "parent process") {
		t.Errorf("the kernel's log does not say why it exited:\n%s", out)
	}
}
