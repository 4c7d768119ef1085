package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOversizedCreateIsAnsweredNotReset: a client that sends a create's
// whole body, 8 MiB (far over --max-body-bytes and more than the
// connection's buffers hold while nobody reads), before reading the answer
// sends it all without a reset and reads the 413, declared and chunked:
// the server reads and drops the rest of the body before it closes.
func TestOversizedCreateIsAnsweredNotReset(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	const size = 8 << 20
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			conn := s.dial(t)
			_ = conn.(*net.TCPConn).SetWriteBuffer(64 << 10)
			_ = conn.SetDeadline(time.Now().Add(hangGuard))
			head := "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer " + testToken + "\r\nContent-Type: application/json\r\n"
			if chunked {
				head += "Transfer-Encoding: chunked\r\n\r\n"
			} else {
				head += "Content-Length: " + strconv.Itoa(size) + "\r\n\r\n"
			}
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			piece := strings.Repeat(" ", 64<<10)
			if chunked {
				piece = strconv.FormatInt(int64(len(piece)), 16) + "\r\n" + piece + "\r\n"
			}
			for sent := 0; sent < size; sent += 64 << 10 {
				if _, err := io.WriteString(conn, piece); err != nil {
					t.Fatalf("writing the body after %d bytes: %v", sent, err)
				}
			}
			if chunked {
				if _, err := io.WriteString(conn, "0\r\n\r\n"); err != nil {
					t.Fatalf("writing the body's end: %v", err)
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			const want = `{"error":413,"message":"request body is larger than the limit of 1048576 bytes"}`
			if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != want {
				t.Fatalf("answer: %d %s, %v; want 413 %s", resp.StatusCode, body, err, want)
			}
		})
	}
}
