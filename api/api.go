// Package api embeds the project's OpenAPI document, openapi.yaml: the
// contract the binary implements, served on the admin listener and used by
// the tests to validate every response.
package api

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document in YAML: the API, and the webhooks
// plantstore sends.
//
//go:embed openapi.yaml
var OpenAPI []byte
