package plantjson

import (
	"errors"
	"testing"
)

// U+0000 cannot be stored in PostgreSQL's text, so every store refuses it
// the same way: a 400 naming the field.
func TestDecodeRejectsNUL(t *testing.T) {
	for body, want := range map[string]string{
		`{"id":1,"name":"a\u0000b"}`:            `"name" must not contain the character U+0000`,
		`{"id":1,"name":"a","tag":"\u0000"}`:    `"tag" must not contain the character U+0000`,
		`{"id":1,"name":"ok","other":"\u0000"}`: "", // unknown members are skipped, not stored
	} {
		_, err := DecodeNewPlant([]byte(body))
		var bad *BadRequestError
		switch {
		case want == "" && err != nil:
			t.Errorf("DecodeNewPlant(%s) = %v, want success", body, err)
		case want != "" && (!errors.As(err, &bad) || bad.Message != want):
			t.Errorf("DecodeNewPlant(%s) = %v, want 400 %q", body, err, want)
		}
	}
}
