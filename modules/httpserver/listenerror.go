package httpserver

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// ListenError is a listener that could not open its address at start. The
// program names the flag that sets the address; this package does not know
// flags.
type ListenError struct {
	Listener string // "api" or "admin"
	Addr     string // as configured
	Err      error  // the cause alone, e.g. syscall.EADDRINUSE
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("%s listener %s: %v", e.Listener, e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// listenError keeps only the cause of a Listen error: "listen tcp
// 127.0.0.1:9090: bind: address already in use" repeats the address and
// names a system call, which tell an operator nothing more.
func listenError(listener, addr string, err error) error {
	cause := err
	var op *net.OpError
	if errors.As(err, &op) {
		cause = op.Err
		var sys *os.SyscallError
		if errors.As(cause, &sys) {
			cause = sys.Err
		}
	}
	return &ListenError{Listener: listener, Addr: addr, Err: cause}
}
