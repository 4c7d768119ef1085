package chaos_test

import "os/exec"

func lookHAProxy() (string, error) { return exec.LookPath("haproxy") }
