// Package compose holds the tests of deploy/compose: three plantstore
// replicas on PostgreSQL behind HAProxy, for trying the scale-out on one
// machine. TestComposeFile validates the file with docker-compose itself
// (`config`), TestHAProxyConfig HAProxy's configuration with haproxy itself
// (`-c`), and TestComposeUp starts the stack with the README's one command
// on the local Docker engine. On a machine that cannot pull, the images it
// names come from scripts/ci-images.sh (the Dockerfile's bases) and
// scripts/compose-images.sh (PostgreSQL and HAProxy).
package compose
