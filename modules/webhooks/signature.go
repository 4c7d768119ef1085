package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Sign is the webhook-signature header of Standard Webhooks 1.0: for each
// secret, "v1," and the base64 HMAC-SHA256 of "id.timestamp.body",
// space-separated. Every active secret signs, so that a receiver that
// knows either the old or the new one verifies during a rotation; a
// rotated secret whose overlap has ended at ts signs nothing.
func Sign(secrets []Secret, id string, ts time.Time, body []byte) string {
	var b strings.Builder
	unix := strconv.FormatInt(ts.Unix(), 10)
	for _, s := range secrets {
		if !s.active(ts) {
			continue
		}
		mac := hmac.New(sha256.New, s.key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(unix))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
