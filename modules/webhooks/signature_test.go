package webhooks

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// The test vector published with the Standard Webhooks specification.
func TestSignMatchesTheSpecificationsTestVector(t *testing.T) {
	secret, err := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign([]Secret{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

// During a rotation both secrets sign: a receiver that knows either one
// verifies with the Standard Webhooks library, and one that knows neither
// does not.
func TestEverySecretSignsAndEachVerifies(t *testing.T) {
	oldText, newText := webhookstest.NewSecret(), webhookstest.NewSecret()
	secrets := make([]Secret, 2)
	for i, text := range []string{newText, oldText} {
		var err error
		if secrets[i], err = ParseSecret(text); err != nil {
			t.Fatal(err)
		}
	}
	body := []byte(`{"id":7,"name":"fern"}`)
	now := time.Now()
	sig := Sign(secrets, "msg_abc", now, body)
	if parts := strings.Split(sig, " "); len(parts) != 2 || !strings.HasPrefix(parts[0], "v1,") || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("signature header %q, want two space-separated v1 signatures", sig)
	}
	h := http.Header{}
	h.Set(HeaderID, "msg_abc")
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, sig)
	for _, text := range []string{oldText, newText} {
		wh, err := standardwebhooks.NewWebhook(text)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("a receiver with one of the secrets: Verify = %v", err)
		}
	}
	stranger, _ := standardwebhooks.NewWebhook(webhookstest.NewSecret())
	if err := stranger.Verify(body, h); err == nil {
		t.Error("a receiver with another secret verified the signature")
	}
}
