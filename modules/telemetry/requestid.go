package telemetry

import (
	"crypto/rand"
	"strconv"
	"sync/atomic"
)

// requestIDHeader carries the request id in both directions: a client or a
// proxy in front may set it, and every answer echoes the id in use.
const requestIDHeader = "X-Request-Id" // canonical form of X-Request-ID

// maxRequestIDLen bounds what a client can make every log line carry.
const maxRequestIDLen = 128

// requestID returns the id sent by the client when it is usable, a fresh
// one otherwise. Usable means 1 to maxRequestIDLen characters out of
// letters, digits and "-_.:+/=", which covers UUIDs, hex and base64 ids and
// keeps quotes, spaces and control characters out of logs and headers.
func requestID(sent string) string {
	if validRequestID(sent) {
		return sent
	}
	return newRequestID()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// Generated ids are a per-process random prefix and a counter: unique
// across replicas and restarts (the prefix has 130 random bits), and cheap:
// no system call for randomness per request. Request ids need to be unique,
// not unguessable; nothing trusts them.
var (
	requestIDPrefix = rand.Text() + "-"
	requestIDSeq    atomic.Uint64
)

func newRequestID() string {
	var buf [64]byte
	b := append(buf[:0], requestIDPrefix...)
	return string(strconv.AppendUint(b, requestIDSeq.Add(1), 36))
}
