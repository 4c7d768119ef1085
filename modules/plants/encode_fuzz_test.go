package plants

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// FuzzEncodeDecodedPlant checks the encoders on every plant the decoder
// accepts: the stored shape decodes back to the same plant, and the create
// answer's shape carries exactly its name and tag. The decoder's own fuzz
// is plantjson's FuzzDecodeNewPlant. Explore with:
//
//	go test -run '^$' -fuzz FuzzEncodeDecodedPlant -fuzztime 60s ./modules/plants
func FuzzEncodeDecodedPlant(f *testing.F) {
	for _, body := range []string{
		`{"id":1,"name":"Monstera"}`,
		`{"id":2,"name":"Monstera","tag":"tropical"}`,
		`{"id":4,"name":"","tag":""}`,
		`{"id":-9223372036854775808,"name":"a"}`,
		`{"id":8,"name":"\"quoted\" \\ \/ \u00e9\n","tag":"\ud83c\udf35"}`,
		`{"id":9,"name":"Ficus élastique 🌿","tag":"<b>&amp;</b>\u2028"}`,
		`{"id":10,"name":"` + strings.Repeat("é", 1024) + `"}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeNewPlant(body)
		if err != nil {
			return // the decoder's refusals are plantjson's to check
		}
		// The stored shape {id, name, tag?} decodes back to the same plant.
		stored := appendStoredPlant(nil, p)
		again, err := decodeNewPlant(stored)
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

// show is p in its stored shape, for a failure's message.
func show(p plant.Plant) string { return string(appendStoredPlant(nil, p)) }
