package plants

import (
	"errors"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// hostileBodies are NewPlant bodies built to cost the decoder work or
// memory: deep nesting, and numbers of a megabyte. Each fits the default
// 1 MiB body limit, so each reaches the decoder in production.
var hostileBodies = []struct {
	name string
	body string
	ok   bool   // the body is a valid NewPlant (the hostile part is ignored)
	want string // the 400 message, for invalid bodies
}{
	{
		name: "100k nested arrays in an unknown field",
		body: `{"id":1,"name":"a","x":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`,
		want: "request body nests deeper than 64 levels",
	},
	{
		name: "100k nested objects in an unknown field",
		body: `{"id":1,"name":"a","x":` + strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + `}`,
		want: "request body nests deeper than 64 levels",
	},
	{
		name: "nesting at the depth limit in an unknown field",
		// The NewPlant object is level 1, so 63 arrays reach level 64.
		body: `{"id":1,"name":"a","x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
		ok:   true,
	},
	{
		name: "nesting one level past the limit in an unknown field",
		body: `{"id":1,"name":"a","x":[{"y":` + strings.Repeat("[", maxDepth-2) + strings.Repeat("]", maxDepth-2) + `}]}`,
		want: "request body nests deeper than 64 levels",
	},
	{
		name: "nesting in an id",
		body: `{"id":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `,"name":"a"}`,
		want: `"id" must be an integer, not an array`,
	},
	{
		name: "1 MB of digits as id",
		body: `{"id":` + strings.Repeat("9", 1_000_000) + `,"name":"a"}`,
		want: `"id" 99999999999999999999999999999999... (1000000 characters) is outside the int64 range`,
	},
	{
		name: "1 MB fraction as id",
		body: `{"id":0.` + strings.Repeat("1", 1_000_000) + `,"name":"a"}`,
		want: `"id" must be an integer, not 0.111111111111111111111111111111... (1000002 characters)`,
	},
	{
		name: "1e999999 as id",
		body: `{"id":1e999999,"name":"a"}`,
		want: `"id" must be an integer, not 1e999999`,
	},
	{
		name: "1 MB of digits in an unknown field",
		body: `{"id":1,"name":"a","x":` + strings.Repeat("7", 1_000_000) + `}`,
		ok:   true,
	},
	{
		name: "1e999999 in an unknown field",
		body: `{"id":1,"name":"a","x":-1e999999}`,
		ok:   true,
	},
	{
		name: "1 MiB of small arrays in an unknown field",
		body: `{"id":1,"name":"a","x":[` + strings.Repeat("[],", 349_000) + `[]]}`,
		ok:   true,
	},
}

// TestDecodeHostileBodies shows that deep nesting and huge numbers are a
// 400 with a short message (never the megabyte echoed back), or ignored in
// an unknown field, and never a crash: Go cannot recover a stack overflow,
// so a recursive decoder would take the process down here.
// BenchmarkDecodeHostile measures what each costs.
func TestDecodeHostileBodies(t *testing.T) {
	for _, tc := range hostileBodies {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.body) > DefaultMaxBodyBytes {
				t.Fatalf("body is %d bytes, over the default limit: it would never reach the decoder", len(tc.body))
			}
			p, err := decodeNewPlant([]byte(tc.body))
			if tc.ok {
				if err != nil || p.ID != 1 || p.Name != "a" || p.Tag != nil {
					t.Fatalf("decodeNewPlant = %+v, %v; want plant 1 named a", p, err)
				}
				return
			}
			var bad *badRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("decodeNewPlant = %+v, %v; want a *badRequestError", p, err)
			}
			if bad.Message != tc.want {
				t.Fatalf("message = %q\nwant      %q", bad.Message, tc.want)
			}
			if p != (plant.Plant{}) {
				t.Fatalf("decodeNewPlant returned %+v with its error; want the zero Plant", p)
			}
		})
	}
}

// BenchmarkDecodeHostile reports the time and memory the decoder spends on
// each hostile body: run with -benchmem.
func BenchmarkDecodeHostile(b *testing.B) {
	for _, tc := range hostileBodies {
		body := []byte(tc.body)
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_, _ = decodeNewPlant(body)
			}
		})
	}
}
