package plants

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestPreconditionsEveryMethod: one evaluation of If-Match and
// If-None-Match, in RFC 9110 §13.2.2's order, for GET, HEAD, PUT and
// DELETE: If-Match failing is a 412 on every method; If-None-Match
// matching is a 304 on GET and HEAD and a 412 on PUT and DELETE; a
// malformed header is a 400 on every method; a request refused by its
// preconditions changes nothing.
func TestPreconditionsEveryMethod(t *testing.T) {
	stored := plant.Plant{ID: 1, Name: "a", Tag: plant.StringPtr("t")}
	current := ETag(stored)
	const stale = `"stale"`

	const (
		proceed     = iota // the method as without preconditions
		notModified        // 304 on GET and HEAD, 412 with msg otherwise
		failed             // 412 with msg on every method
		malformed          // 400 with msg on every method
		missing            // 404 on every method: no plant, preconditions hold
	)
	const (
		changed     = `{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`
		notChanged  = `{"error":412,"message":"plant 1 has not changed: If-None-Match lists its current ETag"}`
		exists      = `{"error":412,"message":"plant 1 exists; If-None-Match: * requires that it not"}`
		gone        = `{"error":412,"message":"plant 2 not found; If-Match requires it to exist"}`
		badIfMatch  = `{"error":400,"message":"If-Match must be \"*\" or a list of entity tags such as \"abc\", not \"nope\""}`
		badIfNone   = `{"error":400,"message":"If-None-Match must be \"*\" or a list of entity tags such as \"abc\", not \"nope\""}`
		badIfNone2  = `{"error":400,"message":"If-None-Match must be \"*\" or a list of entity tags such as \"abc\", not \"\\\"a\\\" \\\"b\\\"\""}`
		notFound    = `{"error":404,"message":"plant 2 not found"}`
		getAnswer   = `{"id":1,"name":"a","tag":"t"}`
		putAnswer   = `{"name":"b"}`
		replacement = `{"name":"b"}`
	)
	cases := []struct {
		name    string
		id      string
		headers []string
		outcome int
		msg     string
	}{
		{"no preconditions", "1", nil, proceed, ""},
		{"If-Match current", "1", []string{"If-Match", current}, proceed, ""},
		{"If-Match in a list", "1", []string{"If-Match", stale + ", " + current}, proceed, ""},
		{"If-Match *", "1", []string{"If-Match", "*"}, proceed, ""},
		{"If-Match stale", "1", []string{"If-Match", stale}, failed, changed},
		{"If-Match weak current", "1", []string{"If-Match", "W/" + current}, failed, changed},
		{"If-None-Match current", "1", []string{"If-None-Match", current}, notModified, notChanged},
		{"If-None-Match weak current", "1", []string{"If-None-Match", "W/" + current}, notModified, notChanged},
		{"If-None-Match *", "1", []string{"If-None-Match", "*"}, notModified, exists},
		{"If-None-Match stale", "1", []string{"If-None-Match", stale}, proceed, ""},
		{"both hold", "1", []string{"If-Match", current, "If-None-Match", stale}, proceed, ""},
		{"If-Match holds, If-None-Match matches", "1", []string{"If-Match", current, "If-None-Match", current}, notModified, notChanged},
		{"If-Match * and If-None-Match *", "1", []string{"If-Match", "*", "If-None-Match", "*"}, notModified, exists},
		// If-Match is evaluated first: its 412 wins over If-None-Match's 304.
		{"If-Match fails before If-None-Match", "1", []string{"If-Match", stale, "If-None-Match", current}, failed, changed},
		{"malformed If-Match", "1", []string{"If-Match", "nope"}, malformed, badIfMatch},
		{"malformed If-None-Match", "1", []string{"If-None-Match", "nope"}, malformed, badIfNone},
		{"If-None-Match not a list", "1", []string{"If-None-Match", `"a" "b"`}, malformed, badIfNone2},
		{"malformed If-None-Match beside a good If-Match", "1", []string{"If-Match", current, "If-None-Match", "nope"}, malformed, badIfNone},
		{"missing, no preconditions", "2", nil, missing, notFound},
		{"missing, If-Match *", "2", []string{"If-Match", "*"}, failed, gone},
		{"missing, If-Match a tag", "2", []string{"If-Match", current}, failed, gone},
		{"missing, If-None-Match *", "2", []string{"If-None-Match", "*"}, missing, notFound},
		{"missing, If-None-Match a tag", "2", []string{"If-None-Match", current}, missing, notFound},
	}
	for _, c := range cases {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete} {
			t.Run(c.name+"/"+method, func(t *testing.T) {
				api, store := seeded(t, stored)
				body := ""
				if method == http.MethodPut {
					body = replacement
				}
				w := send(api, method, "/plants/"+c.id, body, c.headers...)

				var status int
				var answer, etag string
				changes := false
				switch c.outcome {
				case proceed:
					switch method {
					case http.MethodGet, http.MethodHead:
						// The recorder keeps a HEAD's body; net/http sends none.
						status, answer, etag = 200, getAnswer, current
					case http.MethodPut:
						status, answer, etag, changes = 200, putAnswer, ETag(plant.Plant{ID: 1, Name: "b"}), true
					case http.MethodDelete:
						status, changes = 204, true
					}
				case notModified:
					if method == http.MethodGet || method == http.MethodHead {
						status, etag = 304, current
					} else {
						status, answer, etag = 412, c.msg, current
					}
				case failed:
					status, answer = 412, c.msg
					if c.id == "1" {
						etag = current
					}
				case malformed:
					status, answer = 400, c.msg
				case missing:
					status, answer = 404, c.msg
				}
				if status == 304 {
					if w.Code != 304 || w.Body.Len() != 0 {
						t.Fatalf("answer = %d %q, want 304 without a body", w.Code, w.Body)
					}
				} else {
					assertAnswer(t, w, status, answer)
				}
				if got := w.Header().Get("ETag"); got != etag {
					t.Fatalf("ETag = %q, want %q", got, etag)
				}
				got, err := store.Get(context.Background(), 1)
				switch {
				case !changes && (err != nil || !got.Equal(stored)):
					t.Fatalf("after a %d the store holds %+v, %v; want it unchanged", status, got, err)
				case changes && method == http.MethodPut && (err != nil || !got.Equal(plant.Plant{ID: 1, Name: "b"})):
					t.Fatalf("after the PUT the store holds %+v, %v", got, err)
				case changes && method == http.MethodDelete && err == nil:
					t.Fatalf("after the DELETE the store still holds %+v", got)
				}
			})
		}
	}
}

// changeOnce changes the plant to next right after the first read, as
// another client's write landing between a handler's read and its write.
type changeOnce struct {
	plant.Store
	next plant.Plant
	once sync.Once
}

func (s *changeOnce) Get(ctx context.Context, id int64) (plant.Plant, error) {
	p, err := s.Store.Get(ctx, id)
	if err == nil {
		s.once.Do(func() {
			if err := s.Replace(ctx, s.next, nil); err != nil {
				panic(err)
			}
		})
	}
	return p, err
}

// TestPreconditionsDecidedOnTheWrittenState: a PUT or DELETE with
// preconditions is decided on the plant its write applies to. When another
// write changes the plant between the handler's read and its write, the
// write does not happen on the plant read; the preconditions are evaluated
// again on the new plant, which decides the answer.
func TestPreconditionsDecidedOnTheWrittenState(t *testing.T) {
	a, b := plant.Plant{ID: 1, Name: "a"}, plant.Plant{ID: 1, Name: "b"}
	for _, c := range []struct {
		name, method string
		headers      []string
		status       int
		answer       string
		want         *plant.Plant // stored after; nil: none
	}{
		// If-None-Match lists the new plant's tag: the first read (a)
		// passes, but the write would land on b, which it names.
		{"PUT If-None-Match the new state", http.MethodPut, []string{"If-None-Match", ETag(b)}, 412,
			`{"error":412,"message":"plant 1 has not changed: If-None-Match lists its current ETag"}`, &b},
		{"DELETE If-None-Match the new state", http.MethodDelete, []string{"If-None-Match", ETag(b)}, 412,
			`{"error":412,"message":"plant 1 has not changed: If-None-Match lists its current ETag"}`, &b},
		// A precondition that holds for both states: the write happens, on b.
		{"PUT If-None-Match neither", http.MethodPut, []string{"If-None-Match", `"other"`}, 200, `{"name":"c"}`, &plant.Plant{ID: 1, Name: "c"}},
		{"DELETE If-None-Match neither", http.MethodDelete, []string{"If-None-Match", `"other"`}, 204, ``, nil},
		// If-Match naming the read state: b is not it.
		{"PUT If-Match the read state", http.MethodPut, []string{"If-Match", ETag(a)}, 412,
			`{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`, &b},
		{"DELETE If-Match the read state", http.MethodDelete, []string{"If-Match", ETag(a)}, 412,
			`{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`, &b},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, inner := seeded(t, a)
			api := newTestAPI(t, &changeOnce{Store: inner, next: b})
			body := ""
			if c.method == http.MethodPut {
				body = `{"name":"c"}`
			}
			assertAnswer(t, send(api, c.method, "/plants/1", body, c.headers...), c.status, c.answer)
			got, err := inner.Get(context.Background(), 1)
			if c.want == nil {
				if err == nil {
					t.Fatalf("the store holds %+v, want none", got)
				}
				return
			}
			if err != nil || !got.Equal(*c.want) {
				t.Fatalf("the store holds %+v, %v; want %+v", got, err, *c.want)
			}
		})
	}
}

// changeAlways changes the plant right after every read, faster than any
// conditional write can follow.
type changeAlways struct {
	plant.Store
	n int
}

func (s *changeAlways) Get(ctx context.Context, id int64) (plant.Plant, error) {
	p, err := s.Store.Get(ctx, id)
	if err == nil {
		s.n++
		err = s.Replace(ctx, plant.Plant{ID: id, Name: "changed-" + strconv.Itoa(s.n)}, nil)
	}
	return p, err
}

// TestPreconditionsChasingAChangingPlant: a conditional write whose
// preconditions hold on every read but whose plant changes before each
// write gives up after maxConditionalAttempts reads with a 503 and
// Retry-After (not a 412: no precondition failed), having written nothing.
func TestPreconditionsChasingAChangingPlant(t *testing.T) {
	_, inner := seeded(t, plant.Plant{ID: 1, Name: "a"})
	store := &changeAlways{Store: inner}
	api := newTestAPI(t, store)
	w := send(api, http.MethodPut, "/plants/1", `{"name":"mine"}`, "If-None-Match", `"other"`)
	assertAnswer(t, w, 503, `{"error":503,"message":"plant 1 kept changing while the request's preconditions were evaluated; retry later"}`)
	if w.Header().Get("Retry-After") != "1" || store.n != maxConditionalAttempts {
		t.Fatalf("Retry-After %q after %d reads, want 1 after %d", w.Header().Get("Retry-After"), store.n, maxConditionalAttempts)
	}
	if got, _ := inner.Get(context.Background(), 1); got.Name == "mine" {
		t.Fatal("the PUT wrote")
	}
}

// TestIfMatchUnquotedIsOne400: an ETag sent without its quotes is not an
// entity tag: PUT and DELETE answer the same 400 before reading the store,
// and change nothing (the command line quotes a bare ETag itself).
func TestIfMatchUnquotedIsOne400(t *testing.T) {
	stored := plant.Plant{ID: 1, Name: "a"}
	bare := strings.Trim(ETag(stored), `"`)
	want := `{"error":400,"message":"If-Match must be \"*\" or a list of entity tags such as \"abc\", not \"` + bare + `\""}`
	for _, method := range []string{http.MethodPut, http.MethodDelete} {
		api, store := seeded(t, stored)
		w := send(api, method, "/plants/1", `{"name":"b"}`, "If-Match", bare)
		if w.Code != http.StatusBadRequest || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("%s with If-Match %s = %d %s; want 400 %s", method, bare, w.Code, w.Body, want)
		}
		if got, err := store.Get(context.Background(), 1); err != nil || got.Name != "a" {
			t.Errorf("%s changed the plant: %+v, %v", method, got, err)
		}
	}
}
