package nccl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The rendezvous of a run without MPI: rank 0 listens at
// MASTER_ADDR:MASTER_PORT (torchrun's variables: the launch scripts that
// set them for PyTorch serve here too) and hands the NCCL id to each other
// rank, which dials until rank 0 is up. A request carries the world's
// size and the rank, so a rank of another run, or a duplicate rank, is
// told so instead of joining. NCCL then runs its own bootstrap from the
// address inside the id.
//
//	request:  "ragen-nccl-id/1\n" size rank   (uint32 each, big-endian)
//	reply:    0, then the id                   (accepted)
//	          1, then a message to the end     (refused)

const (
	hello    = "ragen-nccl-id/1\n"
	idBytes  = 128
	dialWait = 100 * time.Millisecond
)

// ShareID gives every rank rank 0's id: rank 0 passes it and serves it to
// the size-1 others at addr (host:port; it listens on every interface at
// that port), the others pass nil and get it from addr. It fails after
// timeout, saying who did not come.
func ShareID(id []byte, rank, size int, addr string, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	if rank != 0 {
		return fetchID(addr, rank, size, deadline)
	}
	if len(id) != idBytes {
		return nil, fmt.Errorf("rendezvous: an NCCL id has %d bytes, not %d", idBytes, len(id))
	}
	if size == 1 {
		return id, nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: MASTER_ADDR:MASTER_PORT %q: %w", addr, err)
	}
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: rank 0 cannot listen on port %s (MASTER_PORT; pick a free one): %w", port, err)
	}
	defer l.Close()
	return id, serveID(l, id, size, deadline)
}

// serveID answers requests on l until each of ranks 1..size-1 has the id.
func serveID(l net.Listener, id []byte, size int, deadline time.Time) error {
	served := make([]bool, size)
	missing := size - 1
	for missing > 0 {
		if tl, ok := l.(*net.TCPListener); ok {
			tl.SetDeadline(deadline)
		}
		conn, err := l.Accept()
		if err != nil {
			var wait []int
			for r := 1; r < size; r++ {
				if !served[r] {
					wait = append(wait, r)
				}
			}
			return fmt.Errorf("rendezvous: rank 0 at %s: ranks %v did not ask for the NCCL id: %w", l.Addr(), wait, err)
		}
		rank, err := answer(conn, id, size, served, deadline)
		conn.Close()
		if err != nil {
			continue // a stray or refused client; the others may still come
		}
		served[rank] = true
		missing--
	}
	return nil
}

// answer reads one request and replies: the id, or why not.
func answer(conn net.Conn, id []byte, size int, served []bool, deadline time.Time) (int, error) {
	conn.SetDeadline(deadline)
	req := make([]byte, len(hello)+8)
	if _, err := io.ReadFull(conn, req); err != nil {
		return 0, err
	}
	if !bytes.Equal(req[:len(hello)], []byte(hello)) {
		return 0, errors.New("not a ragen rank")
	}
	theirSize := int(binary.BigEndian.Uint32(req[len(hello):]))
	rank := int(binary.BigEndian.Uint32(req[len(hello)+4:]))
	refuse := func(format string, a ...any) (int, error) {
		msg := fmt.Sprintf(format, a...)
		conn.Write(append([]byte{1}, msg...))
		return 0, errors.New(msg)
	}
	switch {
	case theirSize != size:
		return refuse("rank 0 runs a world of %d ranks, this rank one of %d", size, theirSize)
	case rank < 1 || rank >= size:
		return refuse("rank %d is not one of 1..%d", rank, size-1)
	case served[rank]:
		return refuse("rank %d has already joined: two processes have the same rank", rank)
	}
	if _, err := conn.Write(append([]byte{0}, id...)); err != nil {
		return 0, err
	}
	return rank, nil
}

// fetchID dials rank 0 until it answers or the deadline passes.
func fetchID(addr string, rank, size int, deadline time.Time) ([]byte, error) {
	req := []byte(hello)
	req = binary.BigEndian.AppendUint32(req, uint32(size))
	req = binary.BigEndian.AppendUint32(req, uint32(rank))
	var last error
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err != nil {
			last = err
			time.Sleep(dialWait) // rank 0 is not listening yet
			continue
		}
		conn.SetDeadline(deadline)
		reply, err := func() ([]byte, error) {
			defer conn.Close()
			if _, err := conn.Write(req); err != nil {
				return nil, err
			}
			return io.ReadAll(conn)
		}()
		switch {
		case err != nil:
			last = err
		case len(reply) == 1+idBytes && reply[0] == 0:
			return reply[1:], nil
		case len(reply) > 0 && reply[0] == 1:
			return nil, fmt.Errorf("rendezvous: rank 0 at %s refused rank %d: %s", addr, rank, reply[1:])
		default:
			last = fmt.Errorf("a reply of %d bytes", len(reply))
		}
		time.Sleep(dialWait)
	}
	return nil, fmt.Errorf("rendezvous: rank %d got no NCCL id from rank 0 at %s (MASTER_ADDR:MASTER_PORT) in time: %v", rank, addr, last)
}
