//go:build !unix

package session

import "errors"

// Without dup2 there is no fd-level capture; cells still run, their
// output goes to the process's own stdout and stderr.
var errNoDup = errors.New("fd capture needs a unix system")

func dupFD(int) (int, error) { return -1, errNoDup }
func dup2FD(int, int) error  { return errNoDup }
func closeFD(int)            {}
