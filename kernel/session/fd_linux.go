package session

import "golang.org/x/sys/unix"

func dupFD(fd int) (int, error) { return unix.Dup(fd) }
func dup2FD(from, to int) error { return unix.Dup3(from, to, 0) }
func closeFD(fd int)            { unix.Close(fd) }
