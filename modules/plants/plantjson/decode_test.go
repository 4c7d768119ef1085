package plantjson

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// decodeCases is every kind of body the decoder must tell apart, with the
// exact message a client gets. FuzzDecodeNewPlant seeds its corpus from it.
var decodeCases = []struct {
	name string
	body string
	want plant.Plant // when message is ""
	msg  string      // the *BadRequestError's message; "" for a valid body
}{
	// Valid bodies.
	{name: "minimal", body: `{"id":1,"name":"Monstera"}`, want: plant.Plant{ID: 1, Name: "Monstera"}},
	{name: "with tag", body: `{"id":2,"name":"Monstera","tag":"tropical"}`, want: plant.Plant{ID: 2, Name: "Monstera", Tag: plant.StringPtr("tropical")}},
	{name: "members in any order", body: `{"tag":"t","name":"n","id":3}`, want: plant.Plant{ID: 3, Name: "n", Tag: plant.StringPtr("t")}},
	{name: "empty name and tag", body: `{"id":4,"name":"","tag":""}`, want: plant.Plant{ID: 4, Name: "", Tag: plant.StringPtr("")}},
	{name: "negative id", body: `{"id":-1,"name":"a"}`, want: plant.Plant{ID: -1, Name: "a"}},
	{name: "zero id", body: `{"id":0,"name":"a"}`, want: plant.Plant{ID: 0, Name: "a"}},
	{name: "minus zero id", body: `{"id":-0,"name":"a"}`, want: plant.Plant{ID: 0, Name: "a"}},
	{name: "largest id", body: `{"id":9223372036854775807,"name":"a"}`, want: plant.Plant{ID: 9223372036854775807, Name: "a"}},
	{name: "smallest id", body: `{"id":-9223372036854775808,"name":"a"}`, want: plant.Plant{ID: -9223372036854775808, Name: "a"}},
	{name: "unknown members ignored", body: `{"id":5,"name":"a","color":"green","nested":{"id":"x","name":null},"list":[1,{"a":[]}]}`, want: plant.Plant{ID: 5, Name: "a"}},
	{name: "unknown member null", body: `{"id":5,"name":"a","extra":null}`, want: plant.Plant{ID: 5, Name: "a"}},
	{name: "names are case-sensitive", body: `{"id":6,"name":"a","ID":"x","Name":7,"TAG":null}`, want: plant.Plant{ID: 6, Name: "a"}},
	{name: "surrounding whitespace", body: " \t\r\n{ \"id\" : 7 , \"name\" : \"a\" } \n", want: plant.Plant{ID: 7, Name: "a"}},
	{name: "escapes", body: `{"id":8,"name":"\"quoted\" \\ \/ \u00e9\n","tag":"\ud83c\udf35"}`, want: plant.Plant{ID: 8, Name: "\"quoted\" \\ / é\n", Tag: plant.StringPtr("🌵")}},
	{name: "utf-8", body: `{"id":9,"name":"Ficus élastique 🌿"}`, want: plant.Plant{ID: 9, Name: "Ficus élastique 🌿"}},
	// The length limit counts characters, not bytes: 1024 two-byte ones fit.
	{name: "longest name and tag", body: `{"id":10,"name":"` + strings.Repeat("é", 1024) + `","tag":"` + strings.Repeat("a", 1024) + `"}`,
		want: plant.Plant{ID: 10, Name: strings.Repeat("é", 1024), Tag: plant.StringPtr(strings.Repeat("a", 1024))}},

	// Not one JSON object.
	{name: "empty body", body: ``, msg: "request body is empty; send a NewPlant JSON object"},
	{name: "whitespace only", body: " \n\t", msg: "request body is empty; send a NewPlant JSON object"},
	{name: "null", body: `null`, msg: "request body must be a JSON object, not null"},
	{name: "array", body: `[{"id":1,"name":"a"}]`, msg: "request body must be a JSON object, not an array"},
	{name: "empty array", body: `[]`, msg: "request body must be a JSON object, not an array"},
	{name: "string", body: `"Monstera"`, msg: "request body must be a JSON object, not a string"},
	{name: "number", body: `42`, msg: "request body must be a JSON object, not a number"},
	{name: "negative number", body: `-1`, msg: "request body must be a JSON object, not a number"},
	{name: "boolean", body: `true`, msg: "request body must be a JSON object, not a boolean"},
	{name: "bare word", body: `nope`, msg: "request body is not valid JSON"},
	{name: "truncated literal", body: `tru`, msg: "request body is not valid JSON"},
	{name: "form encoded", body: `id=1&name=a`, msg: "request body is not valid JSON"},
	{name: "byte order mark", body: "\ufeff{\"id\":1,\"name\":\"a\"}", msg: "request body is not valid JSON"},

	// Malformed JSON.
	{name: "open brace only", body: `{`, msg: "request body ends before the JSON object is complete"},
	{name: "truncated object", body: `{"id":1,"name":"a"`, msg: "request body ends before the JSON object is complete"},
	{name: "truncated string", body: `{"id":1,"name":"a`, msg: "request body ends before the JSON object is complete"},
	{name: "unquoted key", body: `{id:1,"name":"a"}`, msg: "request body is not valid JSON at byte 1"},
	{name: "single quotes", body: `{'id':1}`, msg: "request body is not valid JSON at byte 1"},
	{name: "trailing comma", body: `{"id":1,"name":"a",}`, msg: "request body is not valid JSON at byte 18"},
	{name: "double comma", body: `{"id":1,,"name":"a"}`, msg: "request body is not valid JSON at byte 8"},
	{name: "leading zero", body: `{"id":01,"name":"a"}`, msg: "request body is not valid JSON at byte 7"},
	{name: "bad value in unknown member", body: `{"id":1,"name":"a","x":[}`, msg: "request body is not valid JSON at byte 24"},
	{name: "lone surrogate escape", body: `{"id":1,"name":"\ud800"}`, msg: "request body is not valid JSON at byte 16"},
	{name: "invalid utf-8 in name", body: "{\"id\":1,\"name\":\"\xff\"}", msg: "request body is not valid UTF-8"},
	{name: "invalid utf-8 in unknown member", body: "{\"id\":1,\"name\":\"a\",\"x\":\"\xc3\x28\"}", msg: "request body is not valid UTF-8"},
	{name: "repeated name", body: `{"id":1,"name":"a","name":"b"}`, msg: "request body repeats the key /name; each key may appear once"},
	{name: "repeated id with same value", body: `{"id":1,"name":"a","id":1}`, msg: "request body repeats the key /id; each key may appear once"},
	{name: "repeated unknown member", body: `{"x":1,"x":2,"id":1,"name":"a"}`, msg: "request body repeats the key /x; each key may appear once"},

	// Data after the object.
	{name: "trailing object", body: `{"id":1,"name":"a"}{"id":2,"name":"b"}`, msg: "request body has data after the JSON object"},
	{name: "trailing garbage", body: `{"id":1,"name":"a"}x`, msg: "request body has data after the JSON object"},
	{name: "trailing bracket", body: `{"id":1,"name":"a"}]`, msg: "request body has data after the JSON object"},

	// Missing members.
	{name: "empty object", body: `{}`, msg: `"id" is required`},
	{name: "no id", body: `{"name":"a","tag":"t"}`, msg: `"id" is required`},
	{name: "no name", body: `{"id":1,"tag":"t"}`, msg: `"name" is required`},

	// Wrong types.
	{name: "id as string", body: `{"id":"1","name":"a"}`, msg: `"id" must be an integer, not a string`},
	{name: "id null", body: `{"id":null,"name":"a"}`, msg: `"id" must be an integer, not null`},
	{name: "id boolean", body: `{"id":true,"name":"a"}`, msg: `"id" must be an integer, not a boolean`},
	{name: "id array", body: `{"id":[1],"name":"a"}`, msg: `"id" must be an integer, not an array`},
	{name: "id object", body: `{"id":{},"name":"a"}`, msg: `"id" must be an integer, not an object`},
	{name: "id fraction", body: `{"id":1.5,"name":"a"}`, msg: `"id" must be an integer, not 1.5`},
	{name: "id integral fraction", body: `{"id":1.0,"name":"a"}`, msg: `"id" must be an integer, not 1.0`},
	{name: "id exponent", body: `{"id":1e3,"name":"a"}`, msg: `"id" must be an integer, not 1e3`},
	{name: "id above int64", body: `{"id":9223372036854775808,"name":"a"}`, msg: `"id" 9223372036854775808 is outside the int64 range`},
	{name: "id below int64", body: `{"id":-9223372036854775809,"name":"a"}`, msg: `"id" -9223372036854775809 is outside the int64 range`},
	{name: "name null", body: `{"id":1,"name":null}`, msg: `"name" must be a string, not null`},
	{name: "name number", body: `{"id":1,"name":7}`, msg: `"name" must be a string, not a number`},
	{name: "name boolean", body: `{"id":1,"name":false}`, msg: `"name" must be a string, not a boolean`},
	{name: "name array", body: `{"id":1,"name":["a"]}`, msg: `"name" must be a string, not an array`},
	{name: "name object", body: `{"id":1,"name":{}}`, msg: `"name" must be a string, not an object`},
	{name: "tag null", body: `{"id":1,"name":"a","tag":null}`, msg: `"tag" must be a string, not null`},
	{name: "tag number", body: `{"id":1,"name":"a","tag":1}`, msg: `"tag" must be a string, not a number`},
	{name: "name too long", body: `{"id":1,"name":"` + strings.Repeat("é", 1025) + `"}`, msg: `"name" must be at most 1024 characters`},
	{name: "tag too long", body: `{"id":1,"name":"a","tag":"` + strings.Repeat("a", 1025) + `"}`, msg: `"tag" must be at most 1024 characters`},
	{name: "type error before missing name", body: `{"id":"x"}`, msg: `"id" must be an integer, not a string`},
}

func TestDecodeNewPlant(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeNewPlant([]byte(tc.body))
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("DecodeNewPlant(%q) = %v, want %+v", tc.body, err, tc.want)
				}
				if !got.Equal(tc.want) {
					t.Fatalf("DecodeNewPlant(%q) = %s, want %s", tc.body, show(got), show(tc.want))
				}
				return
			}
			var bad *BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("DecodeNewPlant(%q) = %s, %v; want a *BadRequestError", tc.body, show(got), err)
			}
			if bad.Message != tc.msg || err.Error() != tc.msg {
				t.Fatalf("DecodeNewPlant(%q) message\n got %q\nwant %q", tc.body, bad.Message, tc.msg)
			}
		})
	}
}

// TestDecodeNewPlantKeepsNoInput checks that a decoded plant does not alias
// the request buffer, which the handler returns to a pool.
func TestDecodeNewPlantKeepsNoInput(t *testing.T) {
	body := []byte(`{"id":1,"name":"Monstera","tag":"tropical"}`)
	p, err := DecodeNewPlant(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if p.Name != "Monstera" || *p.Tag != "tropical" {
		t.Fatalf("after overwriting the input, plant = %s", show(p))
	}
}

// show is p for a failure's message.
func show(p plant.Plant) string {
	if p.Tag == nil {
		return fmt.Sprintf("{id %d, name %q}", p.ID, p.Name)
	}
	return fmt.Sprintf("{id %d, name %q, tag %q}", p.ID, p.Name, *p.Tag)
}
