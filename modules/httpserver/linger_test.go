package httpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// limitedServers runs an API listener whose one route reads at most 1 KiB
// of a body and answers 413 beyond, as the create does.
func limitedServers(t *testing.T) *Servers {
	t.Helper()
	ready := NewReadiness(nil, zap.NewNop())
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1024)); err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	s := NewServers(Config{
		Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ShutdownTimeout: 10 * time.Second,
	}, api, NewAdminHandler(ready, nil), ready, zap.NewNop())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

// TestOversizedBodyIsReadThenRefused: a client that sends its whole body,
// far over the limit and more than the connection's buffers hold, before
// it reads the answer, sends it all without a reset and then reads the
// 413; declared or chunked. The server reads and drops the rest of the
// body after its answer (a lingering close) instead of resetting the
// connection half a second after it.
func TestOversizedBodyIsReadThenRefused(t *testing.T) {
	s := limitedServers(t)
	const size = 8 << 20 // over any buffer a connection has while nobody reads (the window stays small), under LingerMaxBytes
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			c, err := net.Dial("tcp", s.APIAddr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.(*net.TCPConn).SetWriteBuffer(64 << 10)       // the client's own buffer holds little of the body
			_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a guard against a hang, not a measure
			head := "POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n"
			if chunked {
				head = "POST /plants HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
			}
			if _, err := io.WriteString(c, head); err != nil {
				t.Fatal(err)
			}
			piece := strings.Repeat("x", 64<<10)
			if chunked {
				piece = strconv.FormatInt(int64(len(piece)), 16) + "\r\n" + piece + "\r\n"
			}
			for sent := 0; sent < size; sent += 64 << 10 {
				if _, err := io.WriteString(c, piece); err != nil {
					t.Fatalf("writing the body after %d bytes: %v", sent, err)
				}
			}
			if chunked {
				if _, err := io.WriteString(c, "0\r\n\r\n"); err != nil {
					t.Fatalf("writing the body's end: %v", err)
				}
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != "too large\n" || !resp.Close {
				t.Fatalf("answer: %d %q close=%v, %v; want 413 \"too large\" and close", resp.StatusCode, body, resp.Close, err)
			}
			if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("after the answer: %d bytes, %v; want the end (EOF)", n, err)
			}
		})
	}
}
