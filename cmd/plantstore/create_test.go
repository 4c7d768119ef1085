package main

import (
	"net/http"
	"syscall"
	"testing"
)

func TestCreatePlant(t *testing.T) {
	s := startServer(t, testConfig(t))
	r := s.post(t, `{"id":1,"name":"Monstera","tag":"tropical"}`)
	if r.Status != http.StatusOK || string(r.Body) != `{"name":"Monstera","tag":"tropical"}` {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
}

func TestChildProcessStartsAndStops(t *testing.T) {
	p := startProcess(t)
	resp, err := http.Get(p.Admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz = %d", resp.StatusCode)
	}
	if code := p.Signal(t, syscall.SIGTERM, 30e9); code != 0 {
		t.Fatalf("exit code = %d\n%s", code, p.Output())
	}
}
