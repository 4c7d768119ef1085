package chaos

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
)

// HAProxy is a real HAProxy in front of the replicas, routing only to
// those whose /readyz answers 200, as a Kubernetes Service routes only to
// ready pods.
type HAProxy struct {
	Port    int // the API's port on the load balancer
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// haproxyConfig: health checks on the admin port's /readyz every 300 ms,
// out after 2 failures, back after 2 successes. A connection that fails
// before the request is sent is retried on another replica (redispatch);
// nothing else is retried, since a request that reached a replica may have
// taken effect. One request per server connection (http-server-close), so
// that a replica closing idle keep-alive connections at shutdown cannot
// race a request onto one. X-Replica names the replica that answered; an
// answer without it is HAProxy's own. HAProxy's own 503 (no replica ready)
// carries Retry-After, like a replica's.
var haproxyConfig = template.Must(template.New("haproxy").Parse(`global
	maxconn 2000
	stats socket {{.Dir}}/admin.sock mode 600 level admin

defaults
	mode http
	timeout connect 2s
	timeout client 60s
	timeout server 30s
	timeout check 1s
	retries 3
	option redispatch
	option http-server-close
	errorfile 503 {{.Dir}}/503.http

frontend api
	bind 127.0.0.1:{{.Port}}
	default_backend replicas

backend replicas
	balance roundrobin
	option httpchk GET /readyz
	http-check expect status 200
	http-response set-header X-Replica %s
{{- range .Replicas}}
	server {{.Name}} 127.0.0.1:{{.APIPort}} check port {{.AdminPort}} inter 300ms fall 2 rise 2
{{- end}}
`))

const haproxy503 = "HTTP/1.0 503 Service Unavailable\r\n" +
	"Cache-Control: no-cache\r\nConnection: close\r\nContent-Type: application/json\r\nRetry-After: 1\r\n\r\n" +
	`{"error":503,"message":"no replica is ready"}` + "\n"

// StartHAProxy writes the configuration into dir and runs haproxy in the
// foreground; it is stopped with Stop.
func StartHAProxy(dir string, replicas []*Replica) (*HAProxy, error) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return nil, fmt.Errorf("haproxy is not installed (apt-get install haproxy): %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	h := &HAProxy{Port: port, dir: dir, exited: make(chan struct{})}
	var cfg strings.Builder
	if err := haproxyConfig.Execute(&cfg, map[string]any{"Dir": dir, "Port": port, "Replicas": replicas}); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "haproxy.cfg"), []byte(cfg.String()), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "503.http"), []byte(haproxy503), 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		return nil, err
	}
	//nolint:gosec // G204: haproxy with our own configuration
	h.cmd = exec.Command(bin, "-db", "-f", filepath.Join(dir, "haproxy.cfg"))
	h.cmd.Stdout, h.cmd.Stderr = log, log
	if err := h.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() { h.waitErr = h.cmd.Wait(); log.Close(); close(h.exited) }()
	// Up once its stats socket answers.
	err = poll.Until(context.Background(), 100*time.Millisecond, 30*time.Second, func() (bool, error) {
		_, err := h.command("show info")
		if err == nil {
			return true, nil
		}
		select {
		case <-h.exited:
			out, _ := os.ReadFile(filepath.Join(dir, "haproxy.log"))
			return false, poll.Stop(fmt.Errorf("haproxy exited: %v\n%s", h.waitErr, out))
		default:
			return false, err
		}
	})
	if err != nil {
		h.Stop()
		return nil, fmt.Errorf("haproxy did not start: %w", err)
	}
	return h, nil
}

// URL is the load balancer's base URL.
func (h *HAProxy) URL() string { return "http://127.0.0.1:" + strconv.Itoa(h.Port) }

// Stop ends HAProxy.
func (h *HAProxy) Stop() {
	_ = h.cmd.Process.Kill()
	<-h.exited
}

// command sends one command to HAProxy's stats socket.
func (h *HAProxy) command(cmd string) (string, error) {
	conn, err := net.DialTimeout("unix", filepath.Join(h.dir, "admin.sock"), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", err
	}
	out, err := io.ReadAll(bufio.NewReader(conn))
	return string(out), err
}

// Status is HAProxy's view of each replica, by name: "UP", "DOWN", or a
// transition such as "UP 1/2".
func (h *HAProxy) Status() (map[string]string, error) {
	out, err := h.command("show stat")
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# ")))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("show stat: empty answer")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	st := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) > col["status"] && row[col["pxname"]] == "replicas" {
			switch name := row[col["svname"]]; name {
			case "BACKEND", "FRONTEND":
			default:
				st[name] = row[col["status"]]
			}
		}
	}
	return st, nil
}

// WaitStatus polls until HAProxy reports replica name with status want
// ("UP" or "DOWN"), and returns when it first saw it.
func (h *HAProxy) WaitStatus(ctx context.Context, name, want string) (time.Time, error) {
	for {
		st, err := h.Status()
		if err == nil && st[name] == want {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("haproxy: %s is %q, not %s: %w (%v)", name, st[name], want, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
