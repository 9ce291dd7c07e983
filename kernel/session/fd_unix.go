//go:build unix && !linux

package session

import "golang.org/x/sys/unix"

func dupFD(fd int) (int, error) { return unix.Dup(fd) }
func dup2FD(from, to int) error { return unix.Dup2(from, to) }
func closeFD(fd int)            { unix.Close(fd) }
