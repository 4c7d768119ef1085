// Package docker holds the end-to-end test of the container image: it builds
// the repository's Dockerfile with the local Docker engine and runs the image
// the way the README tells users to (read-only root filesystem, a token, a
// named volume), then checks what a user and an orchestrator rely on.
//
// The test needs a Docker engine. Without one it skips, loudly, unless
// CI=true, where it fails. On a machine that cannot pull the base images,
// run scripts/ci-images.sh first: it creates local stand-ins for them.
package docker
