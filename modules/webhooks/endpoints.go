package webhooks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The events, one per kind of change (changes.Kind's String).
const (
	// EventPlantCreated: a plant was stored by a create (not an identical
	// re-create, not a conflict).
	EventPlantCreated = "plant.created"
	// EventPlantUpdated: a PUT changed a plant's content (not a PUT of the
	// content it has). Envelope endpoints only.
	EventPlantUpdated = "plant.updated"
	// EventPlantDeleted: a DELETE removed a plant (not a DELETE of a
	// missing one). Envelope endpoints only.
	EventPlantDeleted = "plant.deleted"
)

// Events lists the events an endpoint may subscribe to.
var Events = []string{EventPlantCreated, EventPlantUpdated, EventPlantDeleted}

// Format is how an endpoint's requests carry their event.
type Format string

const (
	// FormatOrigin is the origin document's /plant/webhook: the body is
	// the created plant itself. It announces plant.created only: its body
	// cannot say which change it is, nor order a plant's changes.
	FormatOrigin Format = "origin"
	// FormatEnvelope wraps the event's data in its type, time and version
	// (see envelope.go), for every event.
	FormatEnvelope Format = "envelope"
)

// Formats lists the formats an endpoint may use, the default first.
var Formats = []Format{FormatOrigin, FormatEnvelope}

// File is the webhooks file: the endpoints events are sent to.
//
//	endpoints:
//	  - name: crm                  # stable: it keys the endpoint's deliveries and metrics
//	    url: https://crm.example.com/hooks/plants
//	    secrets: [whsec_...]       # each signs every request: rotate by listing the new one first
//	    format: envelope           # optional: origin (the default) or envelope
//	    events: [plant.created]    # optional: every event of the format
//
// "endpoints: []" is a file with no endpoints; a file without the list is
// refused (ErrNoEndpointsList).
type File struct {
	Endpoints []Endpoint
}

// Endpoint is one receiver of events, of the webhooks file or made
// through the API.
type Endpoint struct {
	Name    string // the file's name, or the API's id
	URL     string
	Secrets []Secret
	Format  Format   // FormatOrigin when the file says none
	Events  []string // none: every event of the format

	// API says the endpoint was made through the API (see api.go), and
	// Revision is its stored revision; Disabled pauses it: its events
	// wait, and nothing is sent until it is enabled again.
	API      bool
	Revision int64
	Disabled bool
}

// fileSyntax is the file as written; ParseFile checks it into a File.
// Endpoints is a pointer so that a file without the list (empty, only
// comments, or cut short after "endpoints:") is told from one that lists
// none ("endpoints: []"). Each endpoint is decoded on its own, so that an
// error in one can name it.
type fileSyntax struct {
	Endpoints *[]json.RawMessage `json:"endpoints"`
}

// endpointSyntax is one endpoint as written.
type endpointSyntax struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Secrets []string `json:"secrets"`
	Format  Format   `json:"format,omitempty"`
	Events  []string `json:"events,omitempty"`
}

// endpointFields lists endpointSyntax's fields, for the error of an
// unknown one.
const endpointFields = "name, url, secrets, format and events"

// ErrNoEndpointsList refuses a file that does not list its endpoints. A
// file rewritten in place is empty between the truncate and the write:
// read as "no endpoints", that moment would drop every pending event. An
// operator who means "no endpoints" says so with "endpoints: []".
var ErrNoEndpointsList = errors.New(`endpoints: missing or empty; list the endpoints, or write "endpoints: []" for none`)

// Subscribes reports whether the endpoint wants event: an origin endpoint
// only plant.created, whatever it lists.
func (e Endpoint) Subscribes(event string) bool {
	if e.Format != FormatEnvelope && event != EventPlantCreated {
		return false
	}
	return len(e.Events) == 0 || slices.Contains(e.Events, event)
}

// Secret is a signing secret, "whsec_" and the base64 of its key. Its
// String and JSON never show the key, so it cannot reach a log. A rotated
// secret of the API's signs until notAfter (zero: no end).
type Secret struct {
	key      []byte
	notAfter time.Time
}

// active reports whether s signs at now.
func (s Secret) active(now time.Time) bool { return s.notAfter.IsZero() || now.Before(s.notAfter) }

// ParseSecret reads a secret in Standard Webhooks' form: "whsec_" and the
// standard base64 of 24 to 64 random bytes.
func ParseSecret(s string) (Secret, error) {
	b64, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return Secret{}, errors.New(`a secret must start with "whsec_"`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return Secret{}, errors.New(`a secret must be "whsec_" and standard base64`)
	}
	if len(key) < 24 || len(key) > 64 {
		return Secret{}, fmt.Errorf("a secret's key must be 24 to 64 bytes, not %d", len(key))
	}
	return Secret{key: key}, nil
}

func (Secret) String() string { return "whsec_[redacted]" }

// MarshalJSON implements json.Marshaler, redacted.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// Equal reports whether two secrets hold the same key.
func (s Secret) Equal(o Secret) bool { return bytes.Equal(s.key, o.key) }

// namePattern keeps names fit for a metric label, a log field and a key.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ParseFile reads and checks a webhooks file, YAML or JSON (JSON is YAML).
// Unknown fields are refused: a misspelt "secrets" must not mean "unsigned".
// The error names the first problem and the endpoint it is in.
func ParseFile(data []byte, allowHTTP bool) (File, error) {
	doc, err := yaml.YAMLToJSONStrict(data) // a key written twice is refused too
	if err != nil {
		// One line, for the one line of a failed start.
		return File{}, errors.New(strings.ReplaceAll(strings.ReplaceAll(err.Error(), ":\n  ", ": "), "\n  ", "; "))
	}
	var syntax fileSyntax
	if err := decodeStrict(doc, &syntax); err != nil {
		return File{}, errors.New(syntaxError(err, `the file has one key, "endpoints", a list of endpoints`))
	}
	if syntax.Endpoints == nil {
		return File{}, ErrNoEndpointsList
	}
	var f File
	seen := make(map[string]bool)
	for i, raw := range *syntax.Endpoints {
		where := endpointWhere(i, raw)
		ep, err := parseEndpoint(raw, allowHTTP, seen)
		if err != nil {
			return File{}, fmt.Errorf("%s: %w", where, err)
		}
		f.Endpoints = append(f.Endpoints, ep)
	}
	return f, nil
}

// parseEndpoint reads and checks one endpoint of the file, whose names so
// far are in seen (it adds its own); its error names the field and what is
// wrong with it.
func parseEndpoint(raw json.RawMessage, allowHTTP bool, seen map[string]bool) (Endpoint, error) {
	var e endpointSyntax
	if err := decodeStrict(raw, &e); err != nil {
		return Endpoint{}, errors.New(syntaxError(err, "an endpoint has "+endpointFields))
	}
	if !namePattern.MatchString(e.Name) {
		return Endpoint{}, errors.New("name must be 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if strings.HasPrefix(e.Name, apiIDPrefix) {
		return Endpoint{}, errors.New(`name must not start with "` + apiIDPrefix + `": those are the ids of the endpoints made through the API`)
	}
	if seen[e.Name] {
		return Endpoint{}, errors.New("name is used twice")
	}
	seen[e.Name] = true
	if err := checkURL(e.URL, allowHTTP); err != nil {
		return Endpoint{}, fmt.Errorf("url: %w", err)
	}
	if len(e.Secrets) == 0 {
		return Endpoint{}, errors.New("secrets: list at least one (whsec_...)")
	}
	secrets := make([]Secret, len(e.Secrets))
	for j, text := range e.Secrets {
		var err error
		if secrets[j], err = ParseSecret(text); err != nil {
			return Endpoint{}, fmt.Errorf("secret %d: %w", j+1, err)
		}
	}
	format := e.Format
	if format == "" {
		format = FormatOrigin
	}
	if !slices.Contains(Formats, format) {
		return Endpoint{}, fmt.Errorf("format: %q is not a format (origin, envelope)", e.Format)
	}
	for _, ev := range e.Events {
		switch {
		case !slices.Contains(Events, ev):
			return Endpoint{}, fmt.Errorf("events: %q is not an event (%s)", ev, strings.Join(Events, ", "))
		case format == FormatOrigin && ev != EventPlantCreated:
			return Endpoint{}, fmt.Errorf("events: %q is sent in envelopes only: add \"format: envelope\" "+
				"(the origin format's body is the created plant, for plant.created alone)", ev)
		}
	}
	return Endpoint{Name: e.Name, URL: e.URL, Secrets: secrets, Format: format, Events: e.Events}, nil
}

// decodeStrict decodes the JSON doc into v, refusing a field v lacks.
func decodeStrict(doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// endpointWhere names the endpoint raw, the i-th of the file, in an error:
// by its position and, when it has one, its name.
func endpointWhere(i int, raw json.RawMessage) string {
	var named struct {
		Name any `json:"name"`
	}
	if json.Unmarshal(raw, &named) == nil {
		if name, ok := named.Name.(string); ok {
			return fmt.Sprintf("endpoint %d (%q)", i+1, name)
		}
	}
	return fmt.Sprintf("endpoint %d", i+1)
}

// fileLists names what each list of the file holds (gosec's G101 takes
// "secrets" for a credential: these are the lists' names in a message).
var fileLists = map[string]string{"endpoints": "endpoints", "secrets": "secrets (whsec_...)", "events": "events"} //nolint:gosec // G101: names, no credential

// syntaxError says what is wrong with a part of the file that does not
// decode, in the file's words (a field, a list, text) rather than Go's:
// an unknown field, with what the part may hold (fields), or a value of
// the wrong type, by its field. It never quotes a value, which may be a
// secret.
func syntaxError(err error, fields string) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		got := valueKind(typeErr.Value)
		field, _, _ := strings.Cut(typeErr.Field, ".")
		switch {
		case field == "":
			return fmt.Sprintf("must be a mapping (%s), not %s", fields, got)
		case fileLists[field] != "" && typeErr.Type.Kind() == reflect.Slice:
			return fmt.Sprintf("%s: must be a list of %s, not %s", field, fileLists[field], got)
		case fileLists[field] != "":
			return fmt.Sprintf("%s: each must be text, not %s", field, got)
		}
		return fmt.Sprintf("%s: must be text, not %s", field, got)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Sprintf("unknown field %s (%s)", field, fields)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// valueKind is a JSON value's kind as json.UnmarshalTypeError gives it
// ("number 5", "array"), in the file's words and without the value.
func valueKind(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "bool":
		return "true or false"
	case "string":
		return "text"
	}
	return "a " + kind
}

// checkURL accepts an absolute https URL (http too with allowHTTP). Its
// host is checked again at every dial (see guard.go): a name can resolve
// to anything later.
func checkURL(raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Scheme == "http" && !allowHTTP:
		return errors.New("plain http is refused (use https, or --webhooks-allow-http for development)")
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("must be an https URL")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host")
	case u.Fragment != "":
		return errors.New("must not have a fragment")
	}
	return nil
}
