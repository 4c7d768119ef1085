package webhooks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

func TestParseFileReadsYAMLAndJSON(t *testing.T) {
	s1, s2 := webhookstest.NewSecret(), webhookstest.NewSecret()
	yamlFile := fmt.Sprintf(`
endpoints:
  - name: crm
    url: https://crm.example.com/hooks/plants?key=abc
    secrets: [%s, %s]
  - name: audit.log_2
    url: https://audit.example.com/in
    secrets: [%s]
    events: [plant.created]
`, s1, s2, s1)
	jsonFile := fmt.Sprintf(`{"endpoints":[{"name":"crm","url":"https://crm.example.com/hooks/plants?key=abc","secrets":[%q,%q]},`+
		`{"name":"audit.log_2","url":"https://audit.example.com/in","secrets":[%q],"events":["plant.created"]}]}`, s1, s2, s1)
	for name, text := range map[string]string{"yaml": yamlFile, "json": jsonFile} {
		f, err := ParseFile([]byte(text), false)
		if err != nil {
			t.Fatalf("%s: ParseFile = %v", name, err)
		}
		if len(f.Endpoints) != 2 {
			t.Fatalf("%s: %d endpoints, want 2", name, len(f.Endpoints))
		}
		crm, audit := f.Endpoints[0], f.Endpoints[1]
		if crm.Name != "crm" || crm.URL != "https://crm.example.com/hooks/plants?key=abc" || len(crm.Secrets) != 2 || len(crm.Events) != 0 {
			t.Errorf("%s: first endpoint %+v", name, crm)
		}
		if audit.Name != "audit.log_2" || len(audit.Secrets) != 1 || !audit.Subscribes(EventPlantCreated) {
			t.Errorf("%s: second endpoint %+v", name, audit)
		}
		if !crm.Secrets[0].Equal(audit.Secrets[0]) || crm.Secrets[0].Equal(crm.Secrets[1]) {
			t.Errorf("%s: secrets not read as written", name)
		}
	}
}

// A file that does not decode (an unknown field, a value of the wrong
// type, an endpoint that is not a mapping) is refused in one line that
// names the endpoint, by position and name, and says what is wrong in the
// file's words, never quoting a value (a secret's place may hold one).
func TestParseFileNamesTheEndpointOfASyntaxError(t *testing.T) {
	good := webhookstest.NewSecret()
	first := `{name: a, url: "https://x.example", secrets: [` + good + `]}`
	for _, c := range []struct{ file, want string }{
		{`endpoints: [` + first + `, {name: crm, url: "https://crm.example", secret: [` + good + `]}]`,
			`endpoint 2 ("crm"): unknown field "secret" (an endpoint has name, url, secrets, format and events)`},
		{`endpoints: [{name: crm, url: "https://crm.example", secrets: ` + good + `}]`,
			`endpoint 1 ("crm"): secrets: must be a list of secrets (whsec_...), not text`},
		{`endpoints: [{name: crm, url: "https://crm.example", secrets: [5]}]`, `endpoint 1 ("crm"): secrets: each must be text, not a number`},
		{`endpoints: [` + first + `, {name: 7, url: "https://crm.example", secrets: [` + good + `]}]`, `endpoint 2: name: must be text, not a number`},
		{`endpoints: [{name: crm, url: "https://crm.example", secrets: [` + good + `], events: plant.created}]`,
			`endpoint 1 ("crm"): events: must be a list of events, not text`},
		{`endpoints: [crm]`, `endpoint 1: must be a mapping (an endpoint has name, url, secrets, format and events), not text`},
		{`endpoints: {crm: {}}`, `endpoints: must be a list of endpoints, not a mapping`},
		{`endpoint: []`, `unknown field "endpoint" (the file has one key, "endpoints", a list of endpoints)`},
		{"endpoints:\n  - name: a\n    name: b\n", `yaml: unmarshal errors: line 3: key "name" already set in map`},
	} {
		_, err := ParseFile([]byte(c.file), false)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseFile(%s) = %v, want %s", c.file, err, c.want)
		}
	}
}

func TestParseFileRefusesWithTheEndpointAndNeverTheSecret(t *testing.T) {
	good := webhookstest.NewSecret()
	short := "whsec_" + "c2hvcnQ=" // 5 bytes
	cases := []struct{ file, want string }{
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + short + `]}]`, `endpoint 1 ("a"): secret 1: a secret's key must be 24 to 64 bytes, not 5`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: ["` + strings.TrimPrefix(good, "whsec_") + `"]}]`, `endpoint 1 ("a"): secret 1: a secret must start with "whsec_"`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: ["whsec_!!!"]}]`, `a secret must be "whsec_" and standard base64`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: []}]`, `endpoint 1 ("a"): secrets: list at least one`},
		{`endpoints: [{name: a, url: "http://x.example", secrets: [` + good + `]}]`, `endpoint 1 ("a"): url: plain http is refused`},
		{`endpoints: [{name: a, url: "ftp://x.example", secrets: [` + good + `]}]`, `url: must be an https URL`},
		{`endpoints: [{name: a, url: "https://", secrets: [` + good + `]}]`, `url: has no host`},
		{`endpoints: [{name: A, url: "https://x.example", secrets: [` + good + `]}]`, `endpoint 1 ("A"): name must be`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + good + `]}, {name: a, url: "https://y.example", secrets: [` + good + `]}]`, `endpoint 2 ("a"): name is used twice`},
		{`endpoints: [{name: ep_crm, url: "https://x.example", secrets: [` + good + `]}]`, `endpoint 1 ("ep_crm"): name must not start with "ep_": those are the ids of the endpoints made through the API`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + good + `], events: [plant.moved]}]`, `endpoint 1 ("a"): events: "plant.moved" is not an event (plant.created, plant.updated, plant.deleted)`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + good + `], format: envelope, events: [plant.moved]}]`, `events: "plant.moved" is not an event (plant.created, plant.updated, plant.deleted)`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + good + `], events: [plant.created, plant.updated]}]`, `endpoint 1 ("a"): events: "plant.updated" is sent in envelopes only: add "format: envelope" (the origin format's body is the created plant, for plant.created alone)`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + good + `], format: origin, events: [plant.deleted]}]`, `endpoint 1 ("a"): events: "plant.deleted" is sent in envelopes only: add "format: envelope"`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + good + `], format: cloudevents}]`, `endpoint 1 ("a"): format: "cloudevents" is not a format (origin, envelope)`},
		{`endpoints: [{name: a, url: "https://x.example", secrets: [` + good + `], format: Envelope}]`, `format: "Envelope" is not a format (origin, envelope)`},
		{`endpoints: [{name: a, url: "https://x.example", secret: [` + good + `]}]`, `endpoint 1 ("a"): unknown field "secret"`},
		{`endpoints: {`, `yaml`},
	}
	for _, c := range cases {
		_, err := ParseFile([]byte(c.file), false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseFile(%s) = %v, want an error with %q", c.file, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), strings.TrimPrefix(good, "whsec_")) {
			t.Errorf("ParseFile's error shows a secret: %v", err)
		}
	}
	if _, err := ParseFile([]byte(`endpoints: [{name: a, url: "http://127.0.0.1:9/x", secrets: [`+good+`]}]`), true); err != nil {
		t.Errorf("plain http with allowHTTP: %v", err)
	}
}

// format: says how events are sent; an endpoint without it is origin, and
// an origin endpoint is sent plant.created alone, whatever else happens.
func TestParseFileReadsFormatsAndTheirEvents(t *testing.T) {
	secret := webhookstest.NewSecret()
	f, err := ParseFile([]byte(fmt.Sprintf(`
endpoints:
  - {name: legacy, url: "https://a.example", secrets: [%[1]s]}
  - {name: origin, url: "https://a.example", secrets: [%[1]s], format: origin, events: [plant.created]}
  - {name: all, url: "https://a.example", secrets: [%[1]s], format: envelope}
  - {name: gone, url: "https://a.example", secrets: [%[1]s], format: envelope, events: [plant.deleted]}
`, secret)), false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ep := range f.Endpoints {
		var events []string
		for _, ev := range Events {
			if ep.Subscribes(ev) {
				events = append(events, ev)
			}
		}
		got = append(got, fmt.Sprintf("%s %s %v", ep.Name, ep.Format, events))
	}
	want := []string{
		"legacy origin [plant.created]",
		"origin origin [plant.created]",
		"all envelope [plant.created plant.updated plant.deleted]",
		"gone envelope [plant.deleted]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("endpoints read as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSecretNeverPrints(t *testing.T) {
	text := webhookstest.NewSecret()
	s, err := ParseSecret(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, shown := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%v %+v", s, Endpoint{Secrets: []Secret{s}})} {
		if strings.Contains(shown, strings.TrimPrefix(text, "whsec_")) {
			t.Errorf("a secret printed as %q", shown)
		}
	}
	if b, _ := s.MarshalJSON(); string(b) != `"whsec_[redacted]"` {
		t.Errorf("MarshalJSON = %s", b)
	}
}
