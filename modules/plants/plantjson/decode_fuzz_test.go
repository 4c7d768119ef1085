package plantjson

import (
	"errors"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// FuzzDecodeNewPlant checks the decoder on any input: it never panics, every
// error is a *BadRequestError with a message, and every success agrees with
// an independent decoder and decodes again, from that decoder's encoding,
// to the same plant. (The plants package fuzzes its encoders of a decoded
// plant: FuzzEncodeDecodedPlant.)
//
// The seed corpus is every case of the decoder table, plus testdata/fuzz
// where go test -fuzz saves any failing input; `make test` runs it. Explore
// with:
//
//	go test -run '^$' -fuzz FuzzDecodeNewPlant -fuzztime 60s ./modules/plants/plantjson
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

		// The stored shape {id, name, tag?}, as json v2 writes it, decodes
		// back to the same plant.
		stored, err := jsonv2.Marshal(struct {
			ID   int64   `json:"id"`
			Name string  `json:"name"`
			Tag  *string `json:"tag,omitzero"`
		}{p.ID, p.Name, p.Tag})
		if err != nil {
			t.Fatalf("json v2 cannot encode %s (from %q): %v", show(p), body, err)
		}
		again, err := DecodeNewPlant(stored)
		if err != nil {
			t.Fatalf("re-decoding %q (from %q): %v", stored, body, err)
		}
		if !again.Equal(p) {
			t.Fatalf("round trip of %q: %s, want %s", body, show(again), show(p))
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
