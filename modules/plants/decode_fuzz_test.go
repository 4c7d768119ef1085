package plants

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// FuzzDecodeNewPlant checks the decoder on any input: it never panics, every
// error is a *BadRequestError with a message, and every success agrees with
// an independent decoder and survives a round trip through the encoders.
//
// The seed corpus is every case of the decoder table, plus testdata/fuzz
// where go test -fuzz saves any failing input; `make test` runs it. Explore
// with:
//
//	go test -run '^$' -fuzz FuzzDecodeNewPlant -fuzztime 60s ./modules/plants
func FuzzDecodeNewPlant(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodeNewPlant(body)
		if err != nil {
			var bad *BadRequestError
			if !errors.As(err, &bad) || bad.Message == "" {
				t.Fatalf("DecodeNewPlant(%q) = %T %v; want a *BadRequestError with a message", body, err, err)
			}
			return
		}
		checkAgreesWithJSONv2(t, body, p)

		// The stored shape {id, name, tag?} decodes back to the same plant.
		stored := appendStoredPlant(nil, p)
		again, err := DecodeNewPlant(stored)
		if err != nil {
			t.Fatalf("re-decoding %q (from %q): %v", stored, body, err)
		}
		if !again.Equal(p) {
			t.Fatalf("round trip of %q: %s, want %s", body, show(again), show(p))
		}

		// The create answer's shape {name, tag?} is valid JSON with exactly
		// those members.
		answer := appendPlant(nil, p)
		var shape map[string]string
		if err := json.Unmarshal(answer, &shape); err != nil {
			t.Fatalf("answer %q for %q is not a JSON object of strings: %v", answer, body, err)
		}
		want := map[string]string{"name": p.Name}
		if p.Tag != nil {
			want["tag"] = *p.Tag
		}
		if !maps.Equal(shape, want) {
			t.Fatalf("answer %q does not carry plant %s", answer, show(p))
		}
	})
}

// checkAgreesWithJSONv2 compares an accepted body with what the
// go-json-experiment decoder (strict UTF-8, duplicate names refused,
// case-sensitive names) makes of it: whatever we accept it must accept with
// the same values. Only that direction holds: it allows null for a pointer
// field, which the contract does not.
func checkAgreesWithJSONv2(t *testing.T, body []byte, p plant.Plant) {
	t.Helper()
	var ref struct {
		ID   *int64  `json:"id"`
		Name *string `json:"name"`
		Tag  *string `json:"tag"`
	}
	if err := jsonv2.Unmarshal(body, &ref); err != nil {
		t.Fatalf("DecodeNewPlant accepted %q, which json v2 refuses: %v", body, err)
	}
	if ref.ID == nil || ref.Name == nil {
		t.Fatalf("DecodeNewPlant accepted %q, which has no id or name for json v2", body)
	}
	want := plant.Plant{ID: *ref.ID, Name: *ref.Name, Tag: ref.Tag}
	if !p.Equal(want) {
		t.Fatalf("DecodeNewPlant(%q) = %s, json v2 says %s", body, show(p), show(want))
	}
}
