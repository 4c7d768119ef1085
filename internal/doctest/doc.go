// Package doctest checks what the user documents (README.md and docs/)
// say against the repository: the files they name exist, the recipes they
// give stay out of `make run`'s way and out of git, the install line has
// every package the tests need. It has no code of its own.
package doctest
