package pgtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Children are the processes whose parent is parent, read from /proc: a
// server's backends and auxiliary processes are its postmaster's children.
func Children(parent int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) >= 2 && fields[1] == strconv.Itoa(parent) {
			out = append(out, pid)
		}
	}
	return out
}

// ChildWithTitle is the child of parent whose command line holds title,
// such as a server's "walreceiver": found by its process title, since a
// stopped process cannot answer a query about itself.
func ChildWithTitle(parent int, title string) (int, error) {
	for _, pid := range Children(parent) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if strings.Contains(string(cmdline), title) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process under %d", title, parent)
}
