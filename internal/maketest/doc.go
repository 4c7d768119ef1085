// Package maketest tests the Makefile's developer entry points as a
// newcomer uses them: make run (its addresses and the curl line it prints),
// make test (its summary of skipped tests), make help, make clean, and the
// version a build is stamped with. It has no code of its own.
package maketest
